//! `prec-record`: the Linux-specific layer of `prec record`.
//!
//! Building blocks for a capture loop that writes perf.data (the loop itself
//! lives elsewhere):
//!
//! * [`sys`]: `perf_event_attr`, `perf_event_open`, ioctls, page size, CPU
//!   lists, fork/exec/wait/signal primitives, uname, vDSO copy (the only
//!   module besides [`ring`] with `unsafe`);
//! * [`ring`]: the mmap ring buffer consumer, record splitting, lost counts;
//! * [`events`]: `-e` event-name parsing and perf's cycles → cpu-clock
//!   fallback;
//! * [`tracefs`]: tracepoints by `system:name` and their TRACING_DATA;
//! * [`launch`]: fork the workload behind a start gate, report exec errors,
//!   wait, forward signals;
//! * [`proc_synth`]: /proc readers for synthesizing existing threads, maps
//!   and the kernel map;
//! * [`buildid`]: GNU build-ids of files, the kernel and the vDSO;
//! * [`sysinfo`]: values for the perf.data feature sections;
//! * [`capture`]: the recording loop itself (open, prologue, drain, finish),
//!   with [`synth`] (synthesized side-band records) and [`features`]
//!   (the feature sections perf writes).
#![cfg(target_os = "linux")]

pub mod buildid;
pub mod capture;
pub mod compress;
pub mod control;
pub mod events;
pub mod features;
pub mod launch;
pub mod mapped;
pub mod parallel;
pub mod proc_synth;
pub mod ring;
pub mod synth;
pub mod sys;
pub mod sysinfo;
pub mod tracefs;

#[cfg(test)]
mod e2e_tests;
