"""`vm watchdog`: the process that does, for every fleet of a store, what vm promises over time (docs/watchdog.md).

    duty.py      Duty, DutyContext, DutyResult: one thing the watchdog does to a fleet, as data
    duties.py    DUTIES, the list each pass runs: expire (a passed TTL: reaped) and maintain (repaired to its count)
    retries.py   Retries: when a maintained fleet that could not be repaired is tried again
    loop.py      Watchdog: one pass over the fleets (each under its lease), the loop, signals, webhook deliveries

Another duty (budgets, fleets waiting for capacity) is one `Duty` appended to `duties.DUTIES` (see duty.py).
"""
