"""The TAP runner of the reference self-checks: @check("...") registers a check, run()
runs them all in order, printing one TAP line each (a check may raise Skip), and
returns the exit status."""
import sys
import traceback

CHECKS = []


class Skip(Exception):
    pass


def check(desc):
    def wrap(fn):
        CHECKS.append((desc, fn))
        return fn
    return wrap


def run():
    print(f"1..{len(CHECKS)}")
    failed = 0
    for k, (desc, fn) in enumerate(CHECKS, 1):
        try:
            fn()
            print(f"ok {k} - {desc}")
        except Skip as why:
            print(f"ok {k} - {desc} # SKIP {why}")
        except Exception:  # report and continue with the other checks
            failed += 1
            print(f"not ok {k} - {desc}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
    sys.stdout.flush()
    return 1 if failed else 0
