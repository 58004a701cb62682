//! # fairway-rtapp: the rt-app JSON reader
//!
//! The rt-app JSON reader (facts §8.3, `docs/rtapp.md`) into the portable [`Scenario`]
//! model of `fairway-contract`. Every error names the JSON path of the offending field.
//! The simulator (`fairway-sim`) and the host tooling (`xtask`, which encodes the
//! scenario for the kernel) both read scenarios through it; neither needs the other.
//!
//! ```text
//!   rt-app JSON --parse--> Scenario --validate--+--> fairway-sim (a run in virtual time)
//!                                               +--> scenario::wire::encode --> kernel
//! ```
//!
//! It is a crate of its own, on the host side of the contract, rather than a `std`
//! feature of `fairway-contract`: the contract is built for the bare-metal kernel, and
//! as a separate crate the reader's `std` and jsonc-parser can never reach the kernel's
//! build, whatever features the workspace unifies; the contract stays one
//! configuration to build, lint and test (`cargo test -p fairway-contract` tests all of
//! it), and the reader's tests and fuzz target (`proptest-regressions/scenario.txt`)
//! sit beside the reader, not behind a feature flag.
//!
//! rt-app reads its files with json-c in the lenient mode, so real rt-app files use
//! `/* */` and `//` comments and trailing commas; its companion script (workgen) lets
//! a phase repeat a key (`"run": 10, "sleep": 5, "run": 10`) and renames the repeats
//! before rt-app sees them. This reader accepts exactly that on top of strict JSON
//! (no single quotes, bare words, hexadecimal or non-finite numbers), through
//! jsonc-parser's syntax tree, which keeps every member of an object in file order:
//! events run in file order, and a repeated event key is one more event. A repeated
//! key that is not an event (a task name, a phase, `instance`, `global`...) follows
//! json-c, which rt-app reads its files with: the later value replaces the earlier
//! one, in the earlier one's place. Unknown `global` keys are ignored, as rt-app
//! ignores the global keys it does not read (Android's use cases carry `frag`).
//! What such a rule made of the file is said in [`Parsed::reinterpreted`], which
//! the tools print always: a file that runs differently from how it reads is never
//! silent.

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::cell::RefCell;

use fairway_contract::scenario::{
    Attributes, BandwidthChange, Calibration, ErrorKind, Event, Global, NamedEvent, Phase,
    PolicyName, Scenario, ScenarioError, TaskGroup, TaskSpec, TimerMode,
};
use jsonc_parser::ast::{ObjectProp, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};

/// A parsed scenario and the notes of what was accepted but has no effect here
/// (host-only rt-app options, a byte-order mark), for verbose output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The scenario.
    pub scenario: Scenario,
    /// One line per note, each naming the JSON path.
    pub notes: Vec<String>,
    /// What rt-app's own rules made of the file where it may not read as meant: an
    /// ignored `global` key, a repeated key whose later value replaced the earlier,
    /// an event key read by its prefix (`sleepy` as `sleep`). One line each, naming
    /// the JSON path; the tools print them always, not only with `--verbose`.
    pub reinterpreted: Vec<String>,
}

/// Parses rt-app JSON text, then validates it for `nr_cpus` CPUs.
pub fn parse_and_validate(text: &str, nr_cpus: usize) -> Result<Scenario, ScenarioError> {
    let scenario = parse(text)?;
    scenario.validate(nr_cpus)?;
    Ok(scenario)
}

/// Parses rt-app JSON text, then validates it for `nr_cpus` CPUs, where
/// `ended_elsewhere` says the caller ends the run (the simulator's `--duration`).
pub fn parse_and_validate_for(
    text: &str,
    nr_cpus: usize,
    ended_elsewhere: bool,
) -> Result<Scenario, ScenarioError> {
    let scenario = parse(text)?;
    scenario.validate_for(nr_cpus, ended_elsewhere)?;
    Ok(scenario)
}

/// Parses rt-app JSON text into the model, without range checks (see [`Scenario::validate`]).
pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    parse_with_notes(text).map(|parsed| parsed.scenario)
}

/// json-c's lenient syntax: comments and trailing commas, nothing else beyond JSON.
fn rt_app_syntax() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Parses rt-app JSON text into the model, with notes; no range checks.
pub fn parse_with_notes(text: &str) -> Result<Parsed, ScenarioError> {
    let mut reader = Reader {
        text,
        notes: Vec::new(),
        reinterpreted: RefCell::new(Vec::new()),
    };
    let text = match text.strip_prefix('\u{feff}') {
        Some(rest) => {
            reader
                .notes
                .push("a UTF-8 byte-order mark at the start of the file was skipped".into());
            rest
        }
        None => text,
    };
    reader.text = text;
    let syntax = |message: String| ScenarioError::new("", ErrorKind::Syntax { message });
    let tree = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &rt_app_syntax())
        .map_err(|e| {
            syntax(format!(
                "{} at line {} column {}",
                e.kind(),
                e.line_display(),
                e.column_display()
            ))
        })?;
    let Some(root) = tree.value else {
        return Err(syntax("the file holds no JSON value".into()));
    };
    let scenario = reader.scenario(&root)?;
    Ok(Parsed {
        scenario,
        notes: reader.notes,
        reinterpreted: reader.reinterpreted.into_inner(),
    })
}

/// The path of member `key` of the object at `path`. An empty key is written `""`:
/// otherwise a bad member `""` of the root had the root's own (empty) path, and the
/// message blamed `<root>` (found by the fuzz target).
fn join(path: &str, key: &str) -> String {
    let key = if key.is_empty() { "\"\"" } else { key };
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// cgroup v2's `cpu.max`: `"QUOTA PERIOD"` in µs, `max` for no quota; the period may
/// be left out (`None`: the period in force stays, as `cpu_max_write` keeps it; a
/// group's first one is 100,000 µs).
fn cpu_max(text: &str, path: &str) -> Result<(Option<i64>, Option<i64>), ScenarioError> {
    let wrong = || {
        ScenarioError::new(
            path,
            ErrorKind::WrongType {
                expected: "\"QUOTA PERIOD\" in microseconds, QUOTA a number or max",
                found: format!("\"{text}\""),
            },
        )
    };
    let mut words = text.split_ascii_whitespace();
    let quota = match words.next().ok_or_else(wrong)? {
        "max" => None,
        number => Some(number.parse::<i64>().map_err(|_| wrong())?),
    };
    let period = match words.next() {
        None => None,
        Some(number) => Some(number.parse::<i64>().map_err(|_| wrong())?),
    };
    if words.next().is_some() {
        return Err(wrong());
    }
    Ok((quota, period))
}

fn unknown(path: &str) -> ScenarioError {
    ScenarioError::new(path, ErrorKind::UnknownEvent)
}

/// The note for a repeated key whose later value replaced the earlier one.
fn replaced(path: &str) -> String {
    format!(
        "{path}: given twice; the later value replaces the earlier one, in the earlier \
         one's place, as rt-app's JSON reader (json-c) does"
    )
}

/// rt-app's events by the name their key starts with, longer names before the
/// shorter names they start with (`runtime` before `run`, `memrun` before `mem`).
const EVENT_NAMES: [&str; 20] = [
    "runtime", "run", "sleep", "timer", "yield", "lock", "unlock", "wait", "signal", "broad",
    "sync", "barrier", "suspend", "resume", "sem_post", "sem_wait", "fork", "memrun", "mem",
    "iorun",
];

/// rt-app's host-side global options: accepted, no effect on the schedule.
const HOST_OPTIONS: [&str; 9] = [
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];

/// The scheduling attributes a task or a phase may set.
const ATTRIBUTE_KEYS: [&str; 10] = [
    "policy",
    "priority",
    "cpus",
    "util_min",
    "util_max",
    "taskgroup",
    "nodes_membind",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
];

/// Members of an object: `(key, value)` in file order, repeats kept.
type Members<'r, 'a> = Vec<(Cow<'r, str>, &'r Value<'a>)>;

struct Reader<'t> {
    text: &'t str,
    notes: Vec<String>,
    /// [`Parsed::reinterpreted`]; a cell, as the readers of nested objects borrow
    /// the reader shared.
    reinterpreted: RefCell<Vec<String>>,
}

impl<'t> Reader<'t> {
    /// The value as written in the file (shortened), for messages.
    fn written(&self, value: &Value<'_>) -> String {
        let range = value.range();
        let written = self.text.get(range.start..range.end).unwrap_or("?");
        let mut shown: String = written.chars().take(60).collect();
        if shown.len() < written.len() {
            shown.push('…');
        }
        shown
    }

    fn wrong_type(&self, path: &str, expected: &'static str, value: &Value<'_>) -> ScenarioError {
        ScenarioError::new(
            path,
            ErrorKind::WrongType {
                expected,
                found: self.written(value),
            },
        )
    }

    fn object<'r, 'a>(
        &self,
        value: &'r Value<'a>,
        path: &str,
    ) -> Result<Members<'r, 'a>, ScenarioError> {
        match value {
            Value::Object(object) => Ok(object
                .properties
                .iter()
                .map(|ObjectProp { name, value, .. }| (Cow::Borrowed(name.as_str()), value))
                .collect()),
            _ => Err(self.wrong_type(path, "an object", value)),
        }
    }

    /// Notes what rt-app's rules made of the file (see [`Parsed::reinterpreted`]).
    fn reinterpret(&self, note: String) {
        self.reinterpreted.borrow_mut().push(note);
    }

    /// Members of an object whose keys are names or options, not events (task
    /// names, phases, options): a repeated key's later value replaces the earlier
    /// one in the earlier one's place, as json-c builds the object rt-app reads.
    fn unique_object<'r, 'a>(
        &self,
        value: &'r Value<'a>,
        path: &str,
    ) -> Result<Members<'r, 'a>, ScenarioError> {
        let mut members: Members<'r, 'a> = Vec::new();
        for (key, value) in self.object(value, path)? {
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some(earlier) => {
                    self.reinterpret(replaced(&join(path, &key)));
                    earlier.1 = value;
                }
                None => members.push((key, value)),
            }
        }
        Ok(members)
    }

    fn integer(&self, value: &Value<'_>, path: &str) -> Result<i64, ScenarioError> {
        let Value::NumberLit(number) = value else {
            return Err(self.wrong_type(path, "an integer", value));
        };
        let digits = number.value.strip_prefix('-').unwrap_or(number.value);
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.wrong_type(path, "an integer", value));
        }
        number.value.parse::<i64>().map_err(|_| {
            ScenarioError::new(
                path,
                ErrorKind::TooLarge {
                    written: self.written(value),
                },
            )
        })
    }

    fn string<'r>(&self, value: &'r Value<'_>, path: &str) -> Result<&'r str, ScenarioError> {
        match value {
            Value::StringLit(text) => Ok(&text.value),
            _ => Err(self.wrong_type(path, "a string", value)),
        }
    }

    /// `cpu.max.changes`: `[{"at": US, "cpu.max": "QUOTA PERIOD", "cpu.max.burst": US}]`,
    /// each with `at` and at least one of the two settings, as written (unresolved).
    #[allow(clippy::type_complexity)]
    fn bandwidth_changes(
        &self,
        value: &Value<'_>,
        path: &str,
    ) -> Result<Vec<(i64, Option<(Option<i64>, Option<i64>)>, Option<i64>)>, ScenarioError> {
        let Value::Array(array) = value else {
            return Err(self.wrong_type(path, "an array of changes", value));
        };
        let mut changes = Vec::new();
        for (index, element) in array.elements.iter().enumerate() {
            let here = join(path, &index.to_string());
            let (mut at, mut cpu_max_value, mut burst) = (None, None, None);
            for (k, v) in self.unique_object(element, &here)? {
                let field = join(&here, &k);
                match k.as_ref() {
                    "at" => at = Some(self.integer(v, &field)?),
                    "cpu.max" => cpu_max_value = Some(cpu_max(self.string(v, &field)?, &field)?),
                    "cpu.max.burst" => burst = Some(self.integer(v, &field)?),
                    _ => return Err(unknown(&field)),
                }
            }
            let at = at.ok_or_else(|| ScenarioError::new(join(&here, "at"), ErrorKind::Missing))?;
            if cpu_max_value.is_none() && burst.is_none() {
                return Err(ScenarioError::new(
                    join(&here, "cpu.max"),
                    ErrorKind::Missing,
                ));
            }
            changes.push((at, cpu_max_value, burst));
        }
        Ok(changes)
    }

    fn integers(&self, value: &Value<'_>, path: &str) -> Result<Vec<i64>, ScenarioError> {
        let Value::Array(array) = value else {
            return Err(self.wrong_type(path, "an array of integers", value));
        };
        array
            .elements
            .iter()
            .enumerate()
            .map(|(i, v)| self.integer(v, &join(path, &i.to_string())))
            .collect()
    }

    fn policy(&self, value: &Value<'_>, path: &str) -> Result<PolicyName, ScenarioError> {
        let name = self.string(value, path)?;
        if name == "SCHED_DEADLINE" {
            return Err(ScenarioError::new(
                path,
                ErrorKind::UnsupportedPolicy {
                    name: name.into(),
                    reason: "Fairway has no deadline class",
                },
            ));
        }
        PolicyName::from_rt_app(name)
            .ok_or_else(|| ScenarioError::new(path, ErrorKind::UnknownPolicy { name: name.into() }))
    }

    fn scenario(&mut self, root: &Value<'_>) -> Result<Scenario, ScenarioError> {
        let mut global = Global::default();
        let mut tasks = Vec::new();
        for (key, value) in self.unique_object(root, "")? {
            match key.as_ref() {
                "global" => global = self.global(value)?,
                "tasks" => {
                    for (name, task) in self.unique_object(value, "tasks")? {
                        tasks.push(self.task(&name, task)?);
                    }
                }
                // Kept by rt-app for backward compatibility; resources are created on use.
                "resources" => self.notes.push("resources: ignored, as rt-app does".into()),
                _ => return Err(unknown(&join("", &key))),
            }
        }
        Ok(Scenario { global, tasks })
    }

    fn global(&mut self, value: &Value<'_>) -> Result<Global, ScenarioError> {
        let mut global = Global::default();
        for (key, value) in self.unique_object(value, "global")? {
            let path = join("global", &key);
            match key.as_ref() {
                "duration" => global.duration_s = self.integer(value, &path)?,
                "calibration" => {
                    global.calibration = match value {
                        Value::StringLit(s) => {
                            match s.value.strip_prefix("CPU").map(str::parse::<i64>) {
                                Some(Ok(cpu)) => Calibration::Cpu(cpu),
                                _ => {
                                    return Err(self.wrong_type(
                                        &path,
                                        "\"CPUn\" or an integer",
                                        value,
                                    ));
                                }
                            }
                        }
                        _ => Calibration::NsPerLoop(self.integer(value, &path)?),
                    }
                }
                "default_policy" => global.default_policy = self.policy(value, &path)?,
                "capacities" => global.capacities = self.integers(value, &path)?,
                "frequency_scales" => global.frequency_scales = self.integers(value, &path)?,
                "taskgroups" => {
                    for (group_path, group) in self.unique_object(value, &path)? {
                        let here = join(&path, &group_path);
                        let mut entry = TaskGroup::with_shares(
                            group_path.into_owned(),
                            fairway_contract::scenario::DEFAULT_SHARES,
                        );
                        let mut changes = Vec::new();
                        for (k, v) in self.unique_object(group, &here)? {
                            let field = join(&here, &k);
                            let limit = ["shares", "cpu.max", "cpu.max.burst", "cpu.max.changes"];
                            if entry.path == "/" && limit.contains(&k.as_ref()) {
                                return Err(ScenarioError::new(field, ErrorKind::RootGroupLimit));
                            }
                            match k.as_ref() {
                                "shares" => entry.shares = self.integer(v, &field)?,
                                "cpu.max" => {
                                    let text = self.string(v, &field)?;
                                    let (quota, period) = cpu_max(text, &field)?;
                                    entry.quota_us = quota;
                                    entry.period_us = period.unwrap_or(entry.period_us);
                                }
                                "cpu.max.burst" => entry.burst_us = self.integer(v, &field)?,
                                "cpu.max.changes" => changes = self.bandwidth_changes(v, &field)?,
                                _ => return Err(unknown(&field)),
                            }
                        }
                        // A change keeps what it leaves out from the setting before it.
                        let (mut quota_us, mut period_us, mut burst_us) =
                            (entry.quota_us, entry.period_us, entry.burst_us);
                        for (at_us, cpu_max, burst) in changes {
                            if let Some((quota, period)) = cpu_max {
                                quota_us = quota;
                                period_us = period.unwrap_or(period_us);
                            }
                            burst_us = burst.unwrap_or(burst_us);
                            entry.changes.push(BandwidthChange {
                                at_us,
                                quota_us,
                                period_us,
                                burst_us,
                            });
                        }
                        global.task_groups.push(entry);
                    }
                }
                "pi_enabled" => {
                    global.pi_enabled = match value {
                        Value::BooleanLit(b) => b.value,
                        _ => return Err(self.wrong_type(&path, "true or false", value)),
                    }
                }
                host if HOST_OPTIONS.contains(&host) => self.notes.push(format!(
                    "{path}: an rt-app host option (logs, traces, memory locking, I/O); \
                     accepted, no effect here"
                )),
                _ => self.reinterpret(format!(
                    "{path}: not a global key rt-app reads; ignored, as rt-app ignores it"
                )),
            }
        }
        Ok(global)
    }

    /// Sets the scheduling attribute `key` (one of [`ATTRIBUTE_KEYS`]).
    fn attribute(
        &mut self,
        attributes: &mut Attributes,
        key: &str,
        value: &Value<'_>,
        path: &str,
    ) -> Result<(), ScenarioError> {
        match key {
            "policy" => attributes.policy = Some(self.policy(value, path)?),
            "priority" => attributes.priority = Some(self.integer(value, path)?),
            "cpus" => attributes.cpus = Some(self.integers(value, path)?),
            "util_min" => attributes.util_min = Some(self.integer(value, path)?),
            "util_max" => attributes.util_max = Some(self.integer(value, path)?),
            "taskgroup" => attributes.taskgroup = Some(self.string(value, path)?.to_string()),
            // NUMA binding: a single memory node here.
            "nodes_membind" => self
                .notes
                .push(format!("{path}: one NUMA node here; accepted, no effect")),
            // Linux 6.12: `sched_runtime` of a fair task is its custom slice (refused
            // with the policy check for other policies' use in validation).
            "dl-runtime" => attributes.custom_slice_us = Some(self.integer(value, path)?),
            // SCHED_DEADLINE's period and deadline: no deadline class here.
            "dl-period" | "dl-deadline" => self.notes.push(format!(
                "{path}: a SCHED_DEADLINE parameter; accepted, no effect (no deadline class)"
            )),
            _ => return Err(unknown(path)),
        }
        Ok(())
    }

    /// `{ "ref": ..., "mutex": ... }` of `wait` and `sync`.
    fn condition_and_mutex(
        &self,
        value: &Value<'_>,
        path: &str,
    ) -> Result<(String, String), ScenarioError> {
        let mut condition = None;
        let mut mutex = None;
        for (k, v) in self.unique_object(value, path)? {
            let here = join(path, &k);
            match k.as_ref() {
                "ref" => condition = Some(self.string(v, &here)?.to_string()),
                "mutex" => mutex = Some(self.string(v, &here)?.to_string()),
                _ => return Err(unknown(&here)),
            }
        }
        let missing = |field: &str| ScenarioError::new(join(path, field), ErrorKind::Missing);
        Ok((
            condition.ok_or_else(|| missing("ref"))?,
            mutex.ok_or_else(|| missing("mutex"))?,
        ))
    }

    /// The event for `key`, matched by prefix as rt-app does (`run0`, `sleep1`...),
    /// longer names first ([`EVENT_NAMES`]). A key that is more than an event's name
    /// and an index (`sleepy`, `run_long`) is noted with what it was read as: rt-app
    /// runs it, and a typo would otherwise pass in silence.
    fn event(&self, key: &str, value: &Value<'_>, path: &str) -> Result<Event, ScenarioError> {
        let Some(event_name) = EVENT_NAMES.iter().find(|name| key.starts_with(*name)) else {
            return Err(unknown(path));
        };
        let index = &key[event_name.len()..];
        if !index.bytes().all(|b| b.is_ascii_digit()) {
            self.reinterpret(format!(
                "{path}: read as the event `{event_name}` (rt-app matches events by the \
                 start of their key)"
            ));
        }
        let name = |v: &Value<'_>| self.string(v, path).map(str::to_string);
        let event = match *event_name {
            "runtime" => Event::Runtime {
                us: self.integer(value, path)?,
            },
            "run" => Event::Run {
                us: self.integer(value, path)?,
            },
            "sleep" => Event::Sleep {
                us: self.integer(value, path)?,
            },
            "timer" => self.timer(value, path)?,
            "yield" => Event::Yield,
            "lock" => Event::Lock {
                mutex: name(value)?,
            },
            "unlock" => Event::Unlock {
                mutex: name(value)?,
            },
            "wait" => {
                let (condition, mutex) = self.condition_and_mutex(value, path)?;
                Event::Wait { condition, mutex }
            }
            "signal" => Event::Signal {
                condition: name(value)?,
            },
            "broad" => Event::Broadcast {
                condition: name(value)?,
            },
            "sync" => {
                let (condition, mutex) = self.condition_and_mutex(value, path)?;
                Event::Sync { condition, mutex }
            }
            "barrier" => Event::Barrier { name: name(value)? },
            // rt-app ignores the value (often the task's own name).
            "suspend" => Event::Suspend,
            "resume" => Event::Resume { task: name(value)? },
            "sem_post" => Event::SemPost { name: name(value)? },
            "sem_wait" => Event::SemWait { name: name(value)? },
            "fork" => Event::Fork { task: name(value)? },
            "memrun" => return Err(ScenarioError::new(path, ErrorKind::UnsupportedEvent)),
            "mem" => Event::Mem {
                bytes: self.integer(value, path)?,
            },
            "iorun" => Event::IoRun {
                bytes: self.integer(value, path)?,
            },
            _ => unreachable!("every name of EVENT_NAMES has its arm"),
        };
        Ok(event)
    }

    fn timer(&self, value: &Value<'_>, path: &str) -> Result<Event, ScenarioError> {
        let mut reference = String::from("unique");
        let mut period_us = None;
        let mut mode = TimerMode::Relative;
        for (k, v) in self.unique_object(value, path)? {
            let here = join(path, &k);
            match k.as_ref() {
                "ref" => reference = self.string(v, &here)?.to_string(),
                "period" => period_us = Some(self.integer(v, &here)?),
                "mode" => {
                    mode = match self.string(v, &here)? {
                        "relative" => TimerMode::Relative,
                        "absolute" => TimerMode::Absolute,
                        _ => {
                            return Err(self.wrong_type(&here, "\"relative\" or \"absolute\"", v));
                        }
                    }
                }
                _ => return Err(unknown(&here)),
            }
        }
        Ok(Event::Timer {
            reference,
            period_us,
            mode,
        })
    }

    /// A phase from an object's members; `skip` lists the task keys of a task
    /// without `phases`. A repeated attribute or `loop` takes the later value (json-c's
    /// rule); a repeated event key is one more event (workgen's rule).
    fn phase(
        &mut self,
        name: &str,
        members: &Members<'_, '_>,
        path: &str,
        skip: &[&str],
    ) -> Result<Phase, ScenarioError> {
        let mut phase = Phase {
            name: name.to_string(),
            loop_count: 1,
            attributes: Attributes::default(),
            events: Vec::new(),
        };
        let mut seen: Vec<&str> = Vec::new();
        for (key, value) in members {
            let here = join(path, key);
            if skip.contains(&key.as_ref()) {
                continue;
            }
            let is_event = key != "loop" && !ATTRIBUTE_KEYS.contains(&key.as_ref());
            if is_event {
                phase.events.push(NamedEvent {
                    key: key.to_string(),
                    event: self.event(key, value, &here)?,
                });
                continue;
            }
            if seen.contains(&key.as_ref()) {
                // Applied in file order below, the later value is the one in force.
                self.reinterpret(replaced(&here));
            }
            seen.push(key);
            if key == "loop" {
                phase.loop_count = self.integer(value, &here)?;
            } else {
                self.attribute(&mut phase.attributes, key, value, &here)?;
            }
        }
        Ok(phase)
    }

    fn task(&mut self, name: &str, value: &Value<'_>) -> Result<TaskSpec, ScenarioError> {
        let path = join("tasks", name);
        let members = self.object(value, &path)?;
        let mut task = TaskSpec {
            name: name.to_string(),
            instances: 1,
            loop_count: -1,
            delay_us: 0,
            attributes: Attributes::default(),
            phases: Vec::new(),
        };
        const TASK_KEYS: [&str; 4] = ["instance", "loop", "delay", "phases"];
        let has_phases = members.iter().any(|(k, _)| k == "phases");
        let mut seen: Vec<&str> = Vec::new();
        for (key, value) in &members {
            let here = join(&path, key);
            let is_task_key =
                TASK_KEYS.contains(&key.as_ref()) || ATTRIBUTE_KEYS.contains(&key.as_ref());
            if !is_task_key {
                if has_phases {
                    // With a `phases` object, events cannot also sit in the task.
                    return Err(unknown(&here));
                }
                continue;
            }
            if seen.contains(&key.as_ref()) {
                // Applied in file order below, the later value is the one in force.
                self.reinterpret(replaced(&here));
            }
            seen.push(key);
            match key.as_ref() {
                "instance" => task.instances = self.integer(value, &here)?,
                "loop" => task.loop_count = self.integer(value, &here)?,
                "delay" => task.delay_us = self.integer(value, &here)?,
                "phases" => {
                    task.phases.clear();
                    for (phase_name, phase) in self.unique_object(value, &here)? {
                        let phase_path = join(&here, &phase_name);
                        let phase_members = self.object(phase, &phase_path)?;
                        let phase = self.phase(&phase_name, &phase_members, &phase_path, &[])?;
                        task.phases.push(phase);
                    }
                }
                _ => self.attribute(&mut task.attributes, key, value, &here)?,
            }
        }
        if !has_phases {
            // Events directly in the task form one implicit phase (rt-app tutorial);
            // the task's own keys and attributes were read above.
            let skip: Vec<&str> = TASK_KEYS.iter().chain(&ATTRIBUTE_KEYS).copied().collect();
            task.phases.push(self.phase("", &members, &path, &skip)?);
        }
        Ok(task)
    }
}
