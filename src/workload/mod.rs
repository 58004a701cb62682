//! Workloads the kernel runs: rt-app scenarios ([`rtapp`]) and results reporting.
//!
//! Results are printed as `report:` lines (the format of `docs/report-format.md`),
//! which the host runner turns into a summary and a JSON report.

pub mod hackbench;
pub mod limits;
pub mod report;
pub mod rtapp;
pub mod rtapp_log;
pub mod sched_pipe;

/// The rate at which CPU `cpu` does work now, × 2^20: its capacity times its
/// frequency scale (§7.1, §2.3). A task that runs t ns there does
/// `t × work_rate / 2^20` ns of work at capacity 1024 and the highest
/// frequency, rt-app's unit (docs/boards.md).
pub fn work_rate(cpu: usize) -> u64 {
    let cpu = crate::percpu::of(cpu);
    u64::from(cpu.capacity.load(core::sync::atomic::Ordering::Relaxed))
        * u64::from(
            cpu.frequency_scale
                .load(core::sync::atomic::Ordering::Relaxed),
        )
}
