"""CMS WMCore's work-queue pull (seed 004): WorkQueue's rules, the JobSubmitter and the `wmcore_pull` plugin."""
