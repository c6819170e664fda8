"""Signal receivers: a saved or deleted gdpconfig row drops the cached resolved rows."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from brokerage.models import GdpConfig
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear


@receiver(post_save, sender=GdpConfig)
@receiver(post_delete, sender=GdpConfig)
def gdpconfig_changed(**kwargs) -> None:
    gdpconfig_cache_clear()
