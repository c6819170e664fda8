"""DIRAC task-queue matching (seed 003): the match rules, the live Matcher's draw and the `dirac_match` plugin."""
