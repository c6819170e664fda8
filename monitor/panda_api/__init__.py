"""PanDA's own API paths for panda-client and pbook (issue 36)."""
