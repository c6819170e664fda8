"""The REST API, /api/v1/: decisions and the state behind them, for other services, scripts and shifter tools."""
