//! Reading records on a second thread.
//!
//! The report's sample pass is sequential: each sample may depend on what
//! the ones before it did to the timeline and the call trees. Reading the
//! records does not: putting them in perf's time order and finding each
//! one's attr took 6% of the pass's instructions on a big `-g` profile.
//! [`ReadAhead`] does that on another thread, a few batches of records
//! ahead of the pass, and hands them over in the same order. (Decoding the
//! samples there too cost more than it saved: a decoded sample is ten
//! times the size of a record's reference, and copied twice on the way.)

use prec_format::read::{OrderedRecords, PerfFile};
use prec_format::{RawRecord, Result};
use std::sync::mpsc::{sync_channel, IntoIter, SyncSender};
use std::thread::Scope;

/// A record, in perf's order, with its attr.
pub(crate) struct Delivered<'f> {
    pub raw: RawRecord<'f>,
    /// Index into the file's attrs ([`PerfFile::attr_index`]); `None` for
    /// perf's own records.
    pub attr_index: Option<usize>,
}

/// Records per hand-over. The reader is ahead and waits, so each batch
/// costs the pass a wake-up of it: a futex call, microseconds in a VM.
/// 4096 (not 512) cut those from 300 to 70 on a 136k-sample profile, and
/// its CPU time by 2-3%; the first batch still comes in a millisecond.
const BATCH: usize = 4096;
/// Batches the reader may be ahead.
const AHEAD: usize = 2;

/// The records of a file in perf's order ([`PerfFile::ordered_records`]),
/// read by a thread of `scope`. Ends after the first error, which it
/// yields. Dropping it stops the reader.
pub(crate) struct ReadAhead<'f> {
    source: Source<'f>,
    batch: std::vec::IntoIter<Result<Delivered<'f>>>,
}

enum Source<'f> {
    Thread(IntoIter<Vec<Result<Delivered<'f>>>>),
    /// Where no thread could be started: read as the pass goes.
    Inline(&'f PerfFile<'f>, Box<OrderedRecords<'f>>),
}

impl<'f> ReadAhead<'f> {
    pub fn spawn<'scope>(scope: &'scope Scope<'scope, '_>, file: &'f PerfFile<'f>) -> ReadAhead<'f>
    where
        'f: 'scope,
    {
        Self::spawn_batched(scope, file, BATCH)
    }

    /// [`Self::spawn`] handing over `batch` records at a time.
    fn spawn_batched<'scope>(
        scope: &'scope Scope<'scope, '_>,
        file: &'f PerfFile<'f>,
        batch: usize,
    ) -> ReadAhead<'f>
    where
        'f: 'scope,
    {
        let (send, receive) = sync_channel(AHEAD);
        let source = match std::thread::Builder::new()
            .name("records".into())
            .spawn_scoped(scope, move || read(file, send, batch))
        {
            Ok(_) => Source::Thread(receive.into_iter()),
            Err(_) => Source::Inline(file, Box::new(file.ordered_records())),
        };
        ReadAhead {
            source,
            batch: Vec::new().into_iter(),
        }
    }
}

fn read<'f>(
    file: &'f PerfFile<'f>,
    send: SyncSender<Vec<Result<Delivered<'f>>>>,
    records_per_batch: usize,
) {
    let mut batch = Vec::with_capacity(records_per_batch);
    for r in file.ordered_records() {
        let failed = r.is_err();
        batch.push(r.map(|raw| deliver(file, raw)));
        if batch.len() == records_per_batch || failed {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(records_per_batch));
            if send.send(full).is_err() || failed {
                // The pass stopped early, or the records did.
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = send.send(batch);
    }
}

fn deliver<'f>(file: &PerfFile<'f>, raw: RawRecord<'f>) -> Delivered<'f> {
    Delivered {
        raw,
        attr_index: file.attr_index(&raw),
    }
}

impl<'f> Iterator for ReadAhead<'f> {
    type Item = Result<Delivered<'f>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.batch.next() {
                return Some(r);
            }
            match &mut self.source {
                Source::Thread(batches) => self.batch = batches.next()?.into_iter(),
                Source::Inline(file, records) => {
                    return records.next().map(|r| r.map(|raw| deliver(file, raw)))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/perf")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// (offset, type, attr index) of each record, or the error's offset.
    fn listed<'f>(
        records: impl Iterator<Item = Result<Delivered<'f>>>,
    ) -> Vec<(u64, u32, Option<usize>)> {
        records
            .map(|r| match r {
                Ok(d) => (d.raw.offset, d.raw.header.kind.0, d.attr_index),
                Err(e) => (e.offset, u32::MAX, None),
            })
            .collect()
    }

    #[test]
    fn hands_over_the_records_in_perfs_order_then_the_error() {
        // Two events (attr lookup by id), a pipe, and many batches (small
        // ones: the fixtures are small).
        const BATCH: usize = 64;
        for name in ["hot3-two-events.data", "hot3-pipe.data", "git-log-g.data"] {
            let bytes = fixture(name);
            // Whole, and cut inside a record (the reader's error ends it).
            for len in [bytes.len(), bytes.len() * 2 / 3] {
                let file = PerfFile::parse(&bytes[..len]).expect(name);
                let direct = listed(
                    file.ordered_records()
                        .map(|r| r.map(|raw| deliver(&file, raw))),
                );
                let ahead = std::thread::scope(|scope| {
                    listed(ReadAhead::spawn_batched(scope, &file, BATCH))
                });
                assert!(direct.len() > 300, "{name}: {} records", direct.len());
                if name == "git-log-g.data" && len == bytes.len() {
                    assert!(direct.len() > 2 * BATCH, "{name}: {} records", direct.len());
                }
                assert_eq!(ahead, direct, "{name} cut at {len}");
                let errors = direct.iter().filter(|r| r.1 == u32::MAX).count();
                assert_eq!(errors, (len < bytes.len()) as usize, "{name} cut at {len}");
            }
        }
    }

    #[test]
    fn a_pass_that_stops_early_stops_the_reader() {
        let bytes = fixture("git-log-g.data");
        let file = PerfFile::parse(&bytes).expect("git-log-g.data");
        // The scope ends only once the reader has: it must notice.
        let first =
            std::thread::scope(|scope| ReadAhead::spawn_batched(scope, &file, 64).take(3).count());
        assert_eq!(first, 3);
    }
}
