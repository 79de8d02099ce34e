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
