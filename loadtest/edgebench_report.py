"""What `make bench` (loadtest/bench_edge.py) prints once its rounds have
run: each case's medians against its ceiling, the click's cost, the clicks
check, the targets, and (--where) where nginx's CPU went. The cases' labels,
ceilings and targets are declared here, by letter.
"""

import argparse
from statistics import median

from edgebench_wrk import Result, mean_of

TARGETS = {"b": 0.90, "c": 0.50, "d": 0.85}
# The ceiling each case is measured against; a ceiling is its own.
CEILING_OF = {"g": "f"}
CEILINGS = {"a", "f"}
LABELS = {
    "a": "a ceiling: return 302, no Lua",
    "b": "b cached redirect + click",
    "c": "c cache miss, Redis GET + click",
    "d": "d unknown slug: 404 + orphan",
    "e": "e Lua floor: ngx.redirect only",
    "h": "h cached, 5 rules, last matches",
    "i": "i (h) by ip, browser, date",
    "l": "l cached, visit limit: INCR + click",
    "n": "n (b) with no click",
    "f": "f TLS ceiling: return 302",
    "g": "g TLS cached redirect + click",
}
# Cases measured again on --base's checkout, under their capital letters.
BASE_CASES = set(LABELS) - CEILINGS - {"e"}

# Each run of a case beside the ceiling it is measured against.
Measured = list[tuple[Result, Result]]


def label(key: str) -> str:
    if key.isupper():
        return f"{key} {LABELS[key.lower()][2:]}"[:25] + " (--base)"
    return LABELS[key]


def ceiling_of(key: str) -> str:
    return CEILING_OF.get(key.lower(), "a")


def pair_with_ceilings(order: list[str], runs: list[Result], chosen: list[str], trailing: int) -> dict[str, Measured]:
    """Each run of `order` with its ceiling, by case: the mean of the nearest
    runs of its ceiling either side of it; a ceiling run (but the `trailing`
    last ones) is its own."""
    by_case: dict[str, Measured] = {key: [] for key in chosen}
    for index, key in enumerate(order):
        if key not in CEILINGS:
            ceiling = ceiling_of(key)
            before = max(i for i in range(index) if order[i] == ceiling)
            after = min(i for i in range(index + 1, len(order)) if order[i] == ceiling)
            by_case[key].append((runs[index], mean_of(runs[before], runs[after])))
        elif index < len(order) - trailing:
            by_case[key].append((runs[index], runs[index]))
    return by_case


def report(by_case: dict[str, Measured], args: argparse.Namespace, clicks_ok: bool) -> None:
    """Everything printed after the rounds, from their runs by case."""
    missed = print_table(by_case, args.rounds, args.perf)
    runs = {key: [run for run, _ in measured] for key, measured in by_case.items()}
    print_click_cost(runs)
    if "b" in args.cases:
        print("\nclicks check:", "OK, every click of (b) is in the stream once" if clicks_ok else "FAILED")
    print("targets:", "all met" if not missed else "missed by " + ", ".join(missed))
    if args.where:
        print_where(runs)


def print_table(by_case: dict[str, Measured], rounds: int, perf: bool) -> list[str]:
    """The medians of every case, a row each; returns the cases that missed their target."""
    print(
        f"\nmedians over {rounds} rounds; ratio = req/s over the mean req/s of the ceiling runs "
        "just before and after" + ("; vs e = the ratio over (e)'s in the same round" if "e" in by_case else "")
    )
    print(
        f"{'case':<34} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'ratio':>6} {'target':>7} {'vs e':>5} "
        f"{'CPU us/req':>10} {'(nginx':>7} {'redis)':>7} {'CPU ratio':>9}"
        + (f" {'instr/req':>9} {'ratio':>6}" if perf else "")
    )
    missed = []
    for key, measured in by_case.items():
        if print_case(key, measured, by_case.get("e")):
            missed.append(key)
    return missed


def print_case(key: str, measured: Measured, floor: Measured | None) -> bool:
    """A case's row of medians, then its runs one by one; whether it missed
    its target. `floor` is (e)'s runs, where (e) ran."""
    case_runs = [run for run, _ in measured]
    ratio = median(run.rps / ceiling.rps for run, ceiling in measured)
    # Against the Lua floor of the same round: the Lua a case adds.
    against_floor = ""
    if floor is not None and key not in CEILINGS and ceiling_of(key) == "a":
        against_floor = "{:.2f}".format(
            median(
                (run.rps / ceiling.rps) / (floor_run.rps / floor_ceiling.rps)
                for (run, ceiling), (floor_run, floor_ceiling) in zip(measured, floor, strict=True)
            )
        )
    target = TARGETS.get(key)
    mark = "" if target is None else f">={target:.2f}"
    nginx_us, redis_us = median(r.nginx_us for r in case_runs), median(r.redis_us for r in case_runs)
    # The ceiling's CPU per request over this case's, round by round.
    cpu_ratio = median(
        (ceiling.nginx_us + ceiling.redis_us) / (run.nginx_us + run.redis_us) for run, ceiling in measured
    )
    instructions = ""
    if all(None not in (run.instructions, ceiling.instructions) for run, ceiling in measured):
        instructions = (
            f" {median(r.instructions for r in case_runs):>9.0f} "
            f"{median(ceiling.instructions / run.instructions for run, ceiling in measured):>6.2f}"
        )
    rps = median(r.rps for r in case_runs)
    print(
        f"{label(key):<34} {rps:>8.0f} {median(r.p50_ms for r in case_runs):>7.2f} "
        f"{median(r.p99_ms for r in case_runs):>7.2f} {ratio:>6.2f} {mark:>7} {against_floor:>5} "
        f"{median(r.nginx_us + r.redis_us for r in case_runs):>10.1f} {nginx_us:>7.1f} {redis_us:>7.1f}"
        f" {cpu_ratio:>9.2f}" + instructions
    )
    if key in CEILINGS:
        print("    per run: " + "  ".join(f"{run.rps:.0f}" for run in case_runs))
    else:
        print(
            "    per round: "
            + "  ".join(f"{run.rps:.0f} req/s ({run.rps / ceiling.rps:.2f})" for run, ceiling in measured)
        )
    return target is not None and ratio < target


def print_click_cost(runs: dict[str, list[Result]]) -> None:
    """What the click costs, where (n) ran beside (b): (b)'s nginx CPU a
    request less (n)'s, round by round (and --base's, (B) less (N))."""
    for with_click, without in (("b", "n"), ("B", "N")):
        if with_click in runs and without in runs:
            costs = [run.nginx_us - quiet.nginx_us for run, quiet in zip(runs[with_click], runs[without], strict=True)]
            print(
                f"the click's cost, ({with_click}) less ({without}): {median(costs):.2f} µs of nginx CPU a request "
                f"(rounds: {', '.join(f'{cost:.2f}' for cost in costs)})"
            )


def print_where(runs: dict[str, list[Result]]) -> None:
    """nginx's CPU a request by where it went (--where): medians over the
    rounds, the parts under 0.05 µs in every case summed as the rest; where
    (n) ran, the click's own part of each, (b) less (n) round by round."""
    runs = {key: [run for run in case_runs if run.where] for key, case_runs in runs.items()}
    runs = {key: case_runs for key, case_runs in runs.items() if case_runs}
    if not runs:
        print("\nwhere nginx's CPU went: perf recorded nothing (perf_event_paranoid, or no perf events in this VM)")
        return
    parts = {name for case_runs in runs.values() for run in case_runs for name in run.where}
    cost = {
        key: {name: median(run.where.get(name, 0.0) * run.nginx_us for run in case_runs) for name in parts}
        for key, case_runs in runs.items()
    }
    total = {key: median(run.nginx_us for run in case_runs) for key, case_runs in runs.items()}
    for with_click, without in (("b", "n"), ("B", "N")):
        if with_click in runs and without in runs and len(runs[with_click]) == len(runs[without]):
            pairs = list(zip(runs[with_click], runs[without], strict=True))
            column = f"{with_click}-{without}"
            cost[column] = {
                name: median(
                    run.where.get(name, 0.0) * run.nginx_us - quiet.where.get(name, 0.0) * quiet.nginx_us
                    for run, quiet in pairs
                )
                for name in parts
            }
            total[column] = median(run.nginx_us - quiet.nginx_us for run, quiet in pairs)
    shown = sorted(
        (name for name in parts if max(case[name] for case in cost.values()) >= 0.05),
        key=lambda name: -max(case[name] for case in cost.values()),
    )
    print(
        "\nwhere nginx's CPU went, µs a request (perf record -g, cpu-clock; medians over the rounds, "
        "perf's own cost included; the kernel by the call that entered it)"
    )
    print(f"{'part':<34}" + "".join(f"{key:>8}" for key in cost))
    for name in shown:
        print(f"{name:<34}" + "".join(f"{cost[key][name]:>8.2f}" for key in cost))
    rest = {key: sum(value for name, value in case.items() if name not in shown) for key, case in cost.items()}
    print(f"{'the rest':<34}" + "".join(f"{rest[key]:>8.2f}" for key in cost))
    print(f"{'all':<34}" + "".join(f"{total[key]:>8.2f}" for key in cost))
