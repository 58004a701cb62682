//! Reading a kernel transcript's `core:` lines ([`parse_kernel_lines`]):
//! the set-up and the records, each checked before anything is built from
//! them, since the transcript is untrusted.

use fairway_sched::boot_options::SchedConfig;
use fairway_sched::cpu_core::record::Record;

use super::{ReplaySetup, check_capacity, check_cpus, check_ids, check_setup, check_slots};

/// A kernel transcript's `core:` lines, read and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    /// How the kernel built its cores.
    pub setup: ReplaySetup,
    /// The records, in the transcript's order.
    pub records: Vec<Record>,
    /// Each record's line in the transcript (1 for the first line), for
    /// messages.
    pub lines: Vec<usize>,
    /// Records the kernel's buffers could not hold, over every CPU.
    pub dropped: u64,
}

/// One `core: cpu=N` line and the records counted under it.
struct CpuSection {
    cpu: usize,
    line: usize,
    announced: u64,
    present: u64,
}

/// Reads the kernel's `core:` lines (anything before `core: ` on a line, a
/// timestamp for instance, is ignored): the set-up and the records.
///
/// The transcript is untrusted (a file anyone can edit, or a run cut short),
/// so it is checked before anything is built from it, each error naming the
/// line, the field and its value: one `core: config` line, first, with task
/// and group slots within the scheduler's limits ([`check_setup`]); then,
/// for CPUs `0..cpus` in order, a `core: cpu=N capacity=C records=R
/// dropped=D` line followed by exactly its `R` records, each on that CPU and
/// naming ids below the slots ([`check_ids`]). Fewer records or CPU lines
/// than announced is a truncated transcript, refused: replaying the part
/// present would report agreement with a run it has not seen.
pub fn parse_kernel_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
) -> Result<Transcript, String> {
    let mut setup: Option<(ReplaySetup, Option<usize>, usize)> = None;
    let mut records = Vec::new();
    let mut record_lines = Vec::new();
    let mut sections: Vec<CpuSection> = Vec::new();
    let mut dropped: u64 = 0;
    for (index, line) in lines.into_iter().enumerate() {
        let number = index + 1;
        let at_line = |message: String| format!("line {number}: {message}");
        let Some(at) = line.find("core: ") else {
            continue;
        };
        let rest = &line[at + "core: ".len()..];
        if let Some(fields) = rest.strip_prefix("config ") {
            if let Some((_, _, first)) = &setup {
                return Err(at_line(format!(
                    "a second `core: config` line (the first is line {first})"
                )));
            }
            if !sections.is_empty() {
                return Err(at_line("`core: config` after a `core: cpu` line".into()));
            }
            let (config, tasks, groups, cpus) = parse_config(fields).map_err(at_line)?;
            let config_setup = ReplaySetup {
                config,
                tasks,
                groups,
                capacities: Vec::new(),
            };
            setup = Some((config_setup, cpus, number));
        } else if let Some(fields) = rest.strip_prefix("cpu=") {
            let Some((setup, cpus, _)) = &mut setup else {
                return Err(at_line("a `core: cpu` line before `core: config`".into()));
            };
            let value = |key: &str| -> Result<u64, String> {
                let word = fields
                    .split_ascii_whitespace()
                    .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                    .ok_or_else(|| format!("`core: cpu` line has no {key}="))?;
                word.parse().map_err(|e| format!("{key}={word}: {e}"))
            };
            let cpu_word = fields.split_ascii_whitespace().next().unwrap_or("");
            let cpu: u64 = cpu_word
                .parse()
                .map_err(|e| at_line(format!("cpu={cpu_word}: {e}")))?;
            let expected = sections.len();
            if cpu != expected as u64 {
                return Err(at_line(format!(
                    "cpu={cpu}, but the CPU lines so far announce cpu {expected} next"
                )));
            }
            if let Some(cpus) = *cpus
                && expected >= cpus
            {
                return Err(at_line(format!(
                    "cpu={cpu} is not below the config's cpus={cpus}"
                )));
            }
            check_cpus(expected + 1).map_err(at_line)?;
            check_section(sections.last())?;
            let capacity = value("capacity").map_err(at_line)?;
            check_capacity(expected, capacity).map_err(at_line)?;
            let announced = value("records").map_err(at_line)?;
            let cpu_dropped = value("dropped").map_err(at_line)?;
            dropped = dropped.saturating_add(cpu_dropped);
            setup.capacities.push(capacity as u32);
            sections.push(CpuSection {
                cpu: expected,
                line: number,
                announced,
                present: 0,
            });
        } else if let Some(words) = rest.strip_prefix("record ") {
            let Some((setup, _, _)) = &setup else {
                return Err(at_line("a record before `core: config`".into()));
            };
            let Some(section) = sections.last_mut() else {
                return Err(at_line("a record before any `core: cpu` line".into()));
            };
            let cpu = section.cpu;
            if section.present >= section.announced {
                return Err(at_line(format!(
                    "cpu {cpu} announces records={} (line {}), this is one more",
                    section.announced, section.line
                )));
            }
            section.present += 1;
            let numbers: Vec<u64> = words
                .split_ascii_whitespace()
                .map(|word| {
                    word.parse::<u64>()
                        .map_err(|e| at_line(format!("record word {word}: {e}")))
                })
                .collect::<Result<_, _>>()?;
            let count = numbers.len();
            let words: [u64; 10] = numbers.try_into().map_err(|_| {
                at_line(format!(
                    "a record of {count} numbers, not ten (a cut line?)"
                ))
            })?;
            let record = Record::decode(&words).map_err(|e| {
                at_line(format!("record: {}={} cannot be decoded", e.what, e.value))
            })?;
            if usize::from(record.cpu) != cpu {
                return Err(at_line(format!(
                    "record of cpu={} among cpu {cpu}'s records",
                    record.cpu
                )));
            }
            check_ids(setup, &record).map_err(|e| at_line(format!("record: {e}")))?;
            records.push(record);
            record_lines.push(number);
        }
    }
    let Some((mut setup, cpus, _)) = setup else {
        return Err("no `core: config` line (record_core=N?)".into());
    };
    check_section(sections.last())?;
    if sections.len() < cpus.unwrap_or(1) {
        return Err(format!(
            "transcript truncated: `core: config` announces cpus={}, {} `core: cpu` lines present",
            cpus.unwrap_or(1),
            sections.len()
        ));
    }
    setup.capacities.shrink_to_fit();
    check_setup(&setup)?;
    Ok(Transcript {
        setup,
        records,
        lines: record_lines,
        dropped,
    })
}

/// The `core: config` line's fields: the settings, task and group slots
/// (checked against the scheduler's limits) and `cpus=` when it is there.
fn parse_config(fields: &str) -> Result<(SchedConfig, usize, usize, Option<usize>), String> {
    let get = |key: &str| -> Result<&str, String> {
        fields
            .split_ascii_whitespace()
            .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| format!("`core: config` has no {key}="))
    };
    let flag =
        |key: &str| -> Result<&str, String> { Ok(if get(key)? == "true" { "1" } else { "0" }) };
    // Transcripts from before bandwidth control was recorded do not
    // name it: their run queues were built without it.
    let bandwidth = if get("cfs_bandwidth").is_ok() {
        flag("cfs_bandwidth")?
    } else {
        "0"
    };
    let line = format!(
        "sched={} hz={} hrtick={} slice_us={} uclamp={} cfs_bandwidth={bandwidth}",
        get("sched")?,
        get("hz")?,
        flag("hrtick")?,
        get("slice_us")?,
        flag("uclamp")?
    );
    let config = SchedConfig::parse(&line).map_err(|e| format!("`core: config`: {e}"))?;
    let number = |key: &str| -> Result<usize, String> {
        let word = get(key)?;
        word.parse().map_err(|e| format!("{key}={word}: {e}"))
    };
    let groups = number("groups")?;
    let tasks = number("tasks")?;
    check_slots(tasks, groups)?;
    let cpus = match get("cpus") {
        Ok(_) => {
            let cpus = number("cpus")?;
            check_cpus(cpus)?;
            Some(cpus)
        }
        Err(_) => None,
    };
    Ok((config, tasks, groups, cpus))
}

/// A CPU's records end where the next CPU's line or the transcript does:
/// fewer than it announced means the transcript was cut.
fn check_section(section: Option<&CpuSection>) -> Result<(), String> {
    match section {
        Some(section) if section.present < section.announced => Err(format!(
            "transcript truncated: cpu {} announces records={} (line {}), {} present",
            section.cpu, section.announced, section.line, section.present
        )),
        _ => Ok(()),
    }
}
