"""A broker an organisation could ship on its own: loaded by dotted path, no change to our code."""

import numpy as np

from brokerage.engine import Filter, Plugin, Rejection


def _even_only(context):
    numbers = np.array([int(name.split("-")[1]) for name in context.names])
    return Rejection(numbers % 2 == 1, {"number": numbers})


class EvenSiteBroker(Plugin):
    name = "even_sites"
    candidate_kind = "site"
    retry_after_minutes = 5
    filters = (Filter("even numbers", "match", _even_only),)

    def initial_candidates(self, scenario):
        return sorted(scenario.sites)

    def weigh(self, context, survivors):
        return np.ones(len(survivors)), {"flat": 1}
