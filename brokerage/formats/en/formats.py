"""Dates and times as the rest of the site writes them (issue 35): ISO 8601, 24-hour, with the zone — in the admin
too, where Django's English locale would write "Nov. 24, 2026, 3:26 p.m."."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i:s T"
TIME_FORMAT = "H:i:s"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
MONTH_DAY_FORMAT = "m-d"
YEAR_MONTH_FORMAT = "Y-m"
DATE_INPUT_FORMATS = ["%Y-%m-%d"]
DATETIME_INPUT_FORMATS = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
TIME_INPUT_FORMATS = ["%H:%M:%S", "%H:%M"]
FIRST_DAY_OF_WEEK = 1  # Monday
NUMBER_GROUPING = 3
THOUSAND_SEPARATOR = ","
DECIMAL_SEPARATOR = "."
