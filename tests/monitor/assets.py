"""What a page may not hold: assets fetched from another host (there is no internet at run time)."""

import re

# src/href pointing to another host, or any URL to a known CDN. Pages hold random tokens (CSRF), so a check for
# the letters "cdn" anywhere in the page fails now and then; only URLs are looked at.
FOREIGN_ASSET = re.compile(
    r"""(?:src|href)\s*=\s*["'](?:https?:)?//|https?://[^\s"']*(?:cdn|unpkg|jsdelivr)""", re.IGNORECASE
)


def foreign_assets(html: str) -> list[str]:
    return FOREIGN_ASSET.findall(html)
