//! Thread and map timeline, symbolization, aggregation and perf-report-style output.

pub mod aggregate;
pub mod callchain;
pub mod callgraph;
pub mod data_src;
pub mod dump;
pub mod evswitch;
pub mod flamegraph;
pub mod folded;
pub mod header;
pub mod intel_pt;
pub mod maps;
pub mod output;
mod permute;
mod rbtree;
mod read_ahead;
mod replay;
pub mod sample_read;
pub mod script;
pub mod stats;
pub mod symbolize;
pub mod tasks;
pub mod time_ranges;
pub mod tracepoint;
pub mod unwind;

/// Cuts `s` to at most `max` bytes (at a character boundary), as perf's
/// fixed-size `snprintf` buffers cut what it prints.
pub(crate) fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}
