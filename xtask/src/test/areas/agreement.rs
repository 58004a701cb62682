//! The agreement cases (`fairway` image): the kernel's context switches
//! beside the simulator's, one by one (`agree-*`; docs/agreement.md), and a
//! run's figures beside the simulator's, row by row (`agree-compare-*`, as
//! `cargo xtask compare` prints them; docs/icount.md, "Agreement").

use crate::run::board::workspace_root;
use crate::test::Case;
use crate::test::case::Agree;

/// The agreement matrix; see docs/agreement.md.
fn agreement_cases() -> Vec<Agree> {
    const HOGS: &str = "sim/scenarios/agree-hogs.json";
    const PERIODIC: &str = "sim/scenarios/agree-periodic-mix.json";
    // rt-app's synchronisation events: every block and wake-up shows in the order.
    const EVENTS: &str = "sim/scenarios/agree-rtapp-events.json";
    const LAG: &str = "the kernel charges each slice the ~0.1-0.3 us its timer interrupt and \
                       schedule() take; vruntimes drift until a pick (CFS: leftmost vruntime, \
                       EEVDF: eligibility) compares values within that";
    const WAKE_PERIODIC_CFS: &str = "a wake-up reaches the kernel's run queue ~7 us after the \
                                     simulator's: at 581.50 ms fast, woken, preempts slow in \
                                     the simulator, and slow gives way to medium in the kernel \
                                     (603 agreed when runs did not start on a tick boundary)";
    const ORDER: &str = "two periodic wake-ups fall within a few us of each other; the kernel's \
                         per-task wake-up offsets (instance start-up, timer path) swap them";
    const LATE_PREEMPT: &str = "at 295.36 ms fast preempts slow 115 us later in the kernel than \
                                in the simulator, and when fast sleeps the EEVDF pick goes to \
                                medium in the kernel and slow in the simulator (their lags \
                                that far apart); 114 switches agreed when runs did not start \
                                on a tick boundary";
    const EVENTS_EEVDF: &str = "by switch 15 the kernel runs 55 us behind the simulator (its \
                                events cost instructions, the simulator's none); at switch 16 \
                                the hand-over between the two waiters, which the simulator \
                                makes at one instant, goes on to ping in the kernel and back \
                                to waiter-1 in the simulator (19 agreed when runs did not \
                                start on a tick boundary; 16 before the scheduler driver of \
                                issue 11)";
    vec![
        Agree {
            scenario: HOGS,
            policy: "rr",
            agree_through: None,
            why: "",
        },
        Agree {
            scenario: HOGS,
            policy: "eevdf",
            agree_through: Some(121),
            why: LAG,
        },
        Agree {
            scenario: HOGS,
            policy: "cfs",
            agree_through: Some(62),
            why: LAG,
        },
        Agree {
            scenario: PERIODIC,
            policy: "rr",
            agree_through: Some(211),
            why: ORDER,
        },
        Agree {
            scenario: PERIODIC,
            policy: "eevdf",
            agree_through: Some(323),
            why: LATE_PREEMPT,
        },
        Agree {
            scenario: PERIODIC,
            policy: "cfs",
            agree_through: Some(394),
            why: WAKE_PERIODIC_CFS,
        },
        Agree {
            scenario: EVENTS,
            policy: "rr",
            agree_through: None,
            why: "",
        },
        Agree {
            scenario: EVENTS,
            policy: "eevdf",
            agree_through: Some(16),
            why: EVENTS_EEVDF,
        },
    ]
}

/// The agreement cases of the test command.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for agree in agreement_cases() {
        let mut case = Case::new(
            format!(
                "agree-{}-{}",
                agree
                    .scenario
                    .trim_start_matches("sim/scenarios/agree-")
                    .trim_end_matches(".json"),
                agree.policy
            ),
            "fairway",
        )
        .icount()
        .cpus(1)
        .timeout(120)
        .contains("trace: start");
        case.agree = Some(agree);
        cases.push(case);
    }
    cases.extend(compare_cases());
    cases
}

/// One agreement case: `scenario` on `board` under icount, every row of
/// its comparison with the simulator within its bound.
fn agreement_case(name: &str, board: &'static str, cpus: u32, scenario: &'static str) -> Case {
    let sim_board = (board != "qemu-virt").then_some(board);
    Case::new(name.to_string(), "fairway")
        .board(board)
        .cpus(cpus)
        .icount()
        .timeout(300)
        .scenario(scenario)
        .append(crate::experiments::compare::kernel_append(""))
        .check(move |lines| {
            crate::experiments::compare::compare_lines(
                &workspace_root().join(scenario),
                sim_board,
                cpus,
                "",
                lines,
            )?
            .check()
        })
}

/// The agreement cases of the test command: the kernel tells the
/// simulator's story on each (docs/icount.md, "Agreement").
fn compare_cases() -> Vec<Case> {
    vec![
        agreement_case(
            "agree-compare-ui-juno-r2",
            "juno-r2",
            6,
            "tests/scenarios/agree-ui-juno-r2.json",
        ),
        agreement_case(
            "agree-compare-mix-pixel6",
            "pixel6",
            8,
            "tests/scenarios/agree-mix-pixel6.json",
        ),
        agreement_case(
            "agree-compare-bandwidth-4cpus",
            "qemu-virt",
            4,
            "tests/scenarios/agree-bandwidth-4cpus.json",
        ),
    ]
}

/// The agreement cases the kernel does not pass yet, each diagnosed in
/// docs/icount.md (`cargo xtask test --gaps`).
pub(crate) fn known_gaps() -> Vec<Case> {
    vec![agreement_case(
        "agree-compare-three-small-juno-r0",
        "juno-r0",
        6,
        "tests/scenarios/agree-three-small-juno-r0.json",
    )]
}
