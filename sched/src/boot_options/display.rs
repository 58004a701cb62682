//! A command line for [`BootOptions`]: every option written out, so that
//! [`BootOptions::parse`] reads the same options back (the fuzz target
//! `tests/fuzz_boot_options.rs` checks it for every line it accepts).

use core::fmt;

use crate::bandwidth::PeriodTimerStart;

use super::{BootOptions, SchedConfig, Workload};

impl fmt::Display for BootOptions {
    /// Writes the scheduler's settings, `icount=`, `trace_records=`, `explain=`, `dtb=
    /// dtb_size=` when set, `power_off=`, `semihosting=` and `psci=` when not the default
    /// (so that the lines written before they existed stay as they were),
    /// then `workload=` and its options.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = |on: bool| if on { 1 } else { 0 };
        write!(
            f,
            "{} icount={} trace_records={} explain={}",
            self.sched,
            flag(self.icount),
            self.trace_records,
            self.explain
        )?;
        if let Some(dtb) = self.loaded_dtb {
            write!(f, " dtb={:#x} dtb_size={}", dtb.address, dtb.size)?;
        }
        if self.power_off != super::PowerOff::Off {
            write!(f, " power_off={}", self.power_off.name())?;
        }
        if !self.semihosting {
            write!(f, " semihosting=0")?;
        }
        if !self.psci {
            write!(f, " psci=0")?;
        }
        write!(f, " workload={}", self.workload.name())?;
        match self.workload {
            Workload::Demo => Ok(()),
            Workload::RtApp(rtapp) => write!(
                f,
                " scenario={:#x} scenario_size={} trace_switches={} record_core={} \
                 util_sample_us={} util_warmup_ms={} rtapp_log_rows={}",
                rtapp.scenario.address,
                rtapp.scenario.size,
                rtapp.trace_switches,
                rtapp.record_core,
                rtapp.util_sample_us,
                rtapp.util_warmup_ms,
                rtapp.rtapp_log_rows
            ),
            Workload::SchedPipe(pipe) => write!(
                f,
                " loops={} pinned={} depth={} quota_us={}",
                pipe.loops,
                flag(pipe.pinned),
                pipe.depth,
                pipe.quota_us
            ),
            Workload::Hackbench(hackbench) => write!(
                f,
                " groups={} fds={} loops={}",
                hackbench.groups, hackbench.fds, hackbench.loops
            ),
        }
    }
}

impl fmt::Display for SchedConfig {
    /// Writes every setting as `key=value` words, which [`SchedConfig::parse`]
    /// and the command line read back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = |on: bool| if on { 1 } else { 0 };
        write!(
            f,
            "sched={} hz={} hrtick={} skew_tick={} slice_us={} uclamp={} balance={}",
            self.policy.name(),
            self.hz,
            flag(self.hrtick),
            flag(self.skew_tick),
            self.slice_us,
            match self.uclamp {
                None => "auto",
                Some(true) => "1",
                Some(false) => "0",
            },
            flag(self.balance)
        )?;
        match self.bandwidth_timer {
            PeriodTimerStart::Aligned => write!(f, " bw_timer=aligned"),
            PeriodTimerStart::Period10 => write!(f, " bw_timer=period10"),
            PeriodTimerStart::Random { seed } => write!(f, " bw_timer=random bw_seed={seed}"),
        }?;
        write!(
            f,
            " cfs_bandwidth={} governor={} cpufreq_update={} sched_energy_aware={} \
             eas_overutilized={} tick_seed={}",
            flag(self.cfs_bandwidth),
            self.governor.name(),
            self.cpufreq_update.name(),
            flag(self.energy_aware),
            flag(self.eas_overutilized),
            self.tick_seed
        )?;
        // The features in force, as Linux's features file lists them.
        if let Some(features) = self.features_in_force() {
            write!(f, " sched_feat={features}")?;
        }
        Ok(())
    }
}
