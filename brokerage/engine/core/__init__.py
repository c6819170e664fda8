"""What every brokerage shares: the scenario, the plugin machinery, the decision and its trace, the reason
sentences and the advice beside them, the plugin registry and the plain-text report."""
