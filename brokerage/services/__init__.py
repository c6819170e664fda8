"""Services write: every change to the domain goes through a function here (keyword-only, `<entity>_<action>`)."""
