"""The brokers we ship. Third parties register their own through the BROKERAGE_PLUGINS setting."""
