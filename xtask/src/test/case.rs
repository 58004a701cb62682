//! A QEMU case of the test command and its types: what it boots (image,
//! board, CPUs, GIC, exception level, icount, command line, device tree
//! edits, scenario) and what it must show (its outcome, lines, checks, and
//! agreement with the simulator).

/// What a case must end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    Success,
    Failure,
    Timeout,
}

/// A change to QEMU's own device tree before booting.
pub(crate) type DtsEdit = fn(&str) -> Result<String, String>;

/// A check of a case's decoded output beyond `must_contain`.
pub(crate) type OutputCheck = fn(&[String]) -> Result<(), String>;

/// A check that may carry its own data (a board, a shape).
pub(super) type BoxedCheck = Box<dyn Fn(&[String]) -> Result<(), String> + Send + Sync>;

pub(crate) struct Case {
    pub(super) name: String,
    pub(super) image: &'static str,
    pub(super) cpus: u32,
    pub(super) gic: u32,
    pub(super) el: u32,
    pub(super) icount: bool,
    pub(super) append: String,
    pub(super) smp_topology: &'static str,
    pub(super) dts_edit: Option<DtsEdit>,
    /// An edited device tree loaded into RAM for the `device_tree` image to parse.
    pub(super) loaded_dts_edit: Option<DtsEdit>,
    /// Boot the flat Image instead of the ELF.
    pub(super) as_image: bool,
    /// An rt-app scenario to run.
    pub(super) scenario: Option<&'static str>,
    /// Further checks of the output.
    pub(super) checks: Vec<BoxedCheck>,
    /// Boot twice and require byte-identical JSON reports.
    pub(super) twice_identical: bool,
    /// Break the loaded blob's magic number.
    pub(super) corrupt_magic: bool,
    pub(super) timeout_seconds: u64,
    pub(super) expect: Expect,
    pub(super) must_contain: Vec<String>,
    /// Run an rt-app scenario and compare its switches with the simulator's.
    pub(super) agree: Option<Agree>,
    /// Boot without `-nodefaults` (the firmware-isolation control case).
    pub(super) qemu_defaults: bool,
    /// The board (`boards/<name>`) whose device tree the kernel gets.
    pub(super) board: &'static str,
}

/// A host-and-kernel agreement check (`crate::experiments::agree`): the scenario's first
/// [`AGREE_SWITCHES`] context switches under `policy`, in the kernel (one CPU,
/// icount) and in the simulator, name the same tasks in the same order, at least
/// up to `agree_through`; where they part earlier, `why` says what moves the kernel
/// across a decision threshold that the simulator does not cross.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Agree {
    pub(super) scenario: &'static str,
    pub(super) policy: &'static str,
    /// `None`: every compared switch agrees. `Some(n)`: switches 0..n agree (the
    /// first divergence measured under icount for this kernel; a later one passes).
    pub(super) agree_through: Option<usize>,
    /// Why they part at `agree_through` (docs/agreement.md).
    pub(super) why: &'static str,
}

/// How many switches the agreement cases trace and compare.
pub(crate) const AGREE_SWITCHES: usize = 1000;

impl Case {
    pub(crate) fn new(name: impl Into<String>, image: &'static str) -> Self {
        Case {
            name: name.into(),
            image,
            cpus: 4,
            gic: 3,
            el: 1,
            icount: false,
            append: String::new(),
            smp_topology: "",
            dts_edit: None,
            loaded_dts_edit: None,
            corrupt_magic: false,
            as_image: false,
            scenario: None,
            checks: Vec::new(),
            twice_identical: false,
            timeout_seconds: 60,
            expect: Expect::Success,
            must_contain: Vec::new(),
            agree: None,
            qemu_defaults: false,
            board: "qemu-virt",
        }
    }
    pub(crate) fn board(mut self, board: &'static str) -> Self {
        self.board = board;
        self
    }
    pub(crate) fn cpus(mut self, cpus: u32) -> Self {
        self.cpus = cpus;
        self
    }
    pub(crate) fn gic(mut self, gic: u32) -> Self {
        self.gic = gic;
        self
    }
    pub(crate) fn el(mut self, el: u32) -> Self {
        self.el = el;
        self
    }
    pub(crate) fn icount(mut self) -> Self {
        self.icount = true;
        self
    }
    pub(crate) fn append(mut self, append: impl Into<String>) -> Self {
        self.append = append.into();
        self
    }
    pub(crate) fn expect(mut self, expect: Expect) -> Self {
        self.expect = expect;
        self
    }
    pub(crate) fn timeout(mut self, seconds: u64) -> Self {
        self.timeout_seconds = seconds;
        self
    }
    pub(crate) fn dts(mut self, edit: DtsEdit) -> Self {
        self.dts_edit = Some(edit);
        self
    }
    pub(crate) fn parse(mut self, edit: DtsEdit) -> Self {
        self.loaded_dts_edit = Some(edit);
        self
    }
    pub(crate) fn scenario(mut self, path: &'static str) -> Self {
        self.scenario = Some(path);
        self
    }
    pub(crate) fn check(
        mut self,
        check: impl Fn(&[String]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push(Box::new(check));
        self
    }
    pub(crate) fn twice_identical(mut self) -> Self {
        self.twice_identical = true;
        self
    }
    pub(crate) fn contains(mut self, text: impl Into<String>) -> Self {
        self.must_contain.push(text.into());
        self
    }
}
