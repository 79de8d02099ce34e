//! Thread and map timeline, symbolization, aggregation and perf-report-style output.

pub mod header;
pub mod symbolize;
