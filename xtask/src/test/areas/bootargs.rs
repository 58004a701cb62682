//! The kernel's command line (`fairway` image): options it refuses, each
//! naming the option and the value.

use crate::test::{Case, Expect};

/// The cases of the command line.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // The kernel checks its command line itself (a boot loader can pass anything):
    // issue 10's silently accepted options now stop the boot, naming option and value.
    for (name, append, message) in [
        (
            "bootargs-hz-not-a-number",
            "hz=abc",
            "bootargs: hz=abc: not a number",
        ),
        (
            "bootargs-balance-2",
            "balance=2",
            "bootargs: balance=2: must be one of 0, 1",
        ),
        (
            "bootargs-trailing-garbage",
            "sched=cfs garbage",
            "bootargs: 'garbage' is not an option=value pair",
        ),
        (
            "bootargs-option-of-another-workload",
            "pinned=7",
            "bootargs: pinned=7: an option of workload=sched-pipe, not of workload=demo",
        ),
    ] {
        cases.push(
            Case::new(name, "fairway")
                .cpus(1)
                .append(append)
                .expect(Expect::Failure)
                .contains(message),
        );
    }
    cases.push(
        Case::new("bootargs-too-long", "fairway")
            .cpus(1)
            .append("hz=250 ".repeat(200))
            .expect(Expect::Failure)
            .contains("bootargs: the command line is 1400 bytes, more than 1024"),
    );
    cases
}
