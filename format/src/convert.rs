//! Copying a perf.data into a new one: file mode or pipe mode, either byte
//! order. This is what `prec inject` does, and what the round-trip tests
//! use to check the writer against perf.
//!
//! What changes on the way, so that perf 6.1 reads the copy:
//! - attrs are written with size 128 (see [`crate::write`]);
//! - COMPRESSED records are replaced by what they hold, and the COMPRESSED
//!   feature is dropped;
//! - a directory's data files follow its data section in one file, and the
//!   DIR_FORMAT feature is dropped (perf 6.1 asserts on it in a file);
//! - pipe-only records (HEADER_ATTR, HEADER_FEATURE, HEADER_EVENT_TYPE,
//!   HEADER_TRACING_DATA) are not copied as records: the writer emits attrs,
//!   features and tracing data its own way;
//! - record types perf 6.1 does not know (kernel types above 21, perf types
//!   above 82) are dropped and counted.

use std::io::{Seek, Write};

use crate::constants::{FeatureId, RecordType};
use crate::endian::Endian;
use crate::error::{Error, Result};
use crate::features;
use crate::read::PerfFile;
use crate::write::{FileWriter, PipeWriter};

/// Highest kernel record type perf 6.1 knows (AUX_OUTPUT_HW_ID).
const LAST_KERNEL_TYPE_6_1: u32 = 21;
/// Highest perf record type perf 6.1 knows (FINISHED_INIT).
const LAST_USER_TYPE_6_1: u32 = 82;

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub records: u64,
    /// Records of types perf 6.1 would reject, left out.
    pub dropped: u64,
    pub data_bytes: u64,
}

fn keep(kind: RecordType) -> bool {
    match kind {
        RecordType::HEADER_ATTR
        | RecordType::HEADER_FEATURE
        | RecordType::HEADER_EVENT_TYPE
        | RecordType::HEADER_TRACING_DATA
        | RecordType::COMPRESSED => false,
        k if k.is_kernel() => k.0 <= LAST_KERNEL_TYPE_6_1 && k.0 != 0,
        k => k.0 <= LAST_USER_TYPE_6_1,
    }
}

/// The feature sections to carry over, encoded in `endian`.
pub fn copied_features(file: &PerfFile<'_>, endian: Endian) -> Vec<(FeatureId, Vec<u8>)> {
    let mut out = Vec::new();
    for f in file.features() {
        if f.id == FeatureId::COMPRESSED
            || f.id == FeatureId::DIR_FORMAT
            || f.id.0 >= FeatureId::LAST_FEATURE_6_1.0
        {
            continue;
        }
        // Tracing data carries its own byte order.
        if endian == file.endian() || f.id == FeatureId::TRACING_DATA {
            // EVENT_DESC holds attrs: re-encode so their size suits perf 6.1.
            if f.id == FeatureId::EVENT_DESC {
                if let Ok(decoded) = features::decode(f.id, f.data, f.offset, file.endian()) {
                    out.push((f.id, features::encode(&decoded, endian)));
                    continue;
                }
            }
            out.push((f.id, f.data.to_vec()));
        } else if let Ok(decoded) = features::decode(f.id, f.data, f.offset, file.endian()) {
            if !matches!(decoded, features::Feature::Raw { .. }) {
                out.push((f.id, features::encode(&decoded, endian)));
            }
        }
    }
    out.sort_by_key(|f| f.0);
    out.dedup_by_key(|f| f.0);
    out
}

/// Calls `sink` with each record to copy, already encoded in `endian`.
fn for_each_record(
    file: &PerfFile<'_>,
    endian: Endian,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<CopyStats> {
    let mut stats = CopyStats::default();
    let mut buf = Vec::with_capacity(1 << 16);
    let input = file.input();
    for r in file.records() {
        let r = r?;
        if !keep(r.header.kind) {
            if !matches!(
                r.header.kind,
                RecordType::HEADER_ATTR
                    | RecordType::HEADER_FEATURE
                    | RecordType::HEADER_EVENT_TYPE
                    | RecordType::HEADER_TRACING_DATA
            ) {
                stats.dropped += 1;
            }
            continue;
        }
        buf.clear();
        if endian == file.endian() {
            // Raw bytes: header and body are contiguous in the source.
            let e = endian;
            e.put_u32(&mut buf, r.header.kind.0);
            e.put_u16(&mut buf, r.header.misc);
            e.put_u16(&mut buf, r.header.size);
            buf.extend_from_slice(r.body);
            buf.extend_from_slice(r.trailing);
        } else {
            crate::encode::encode_record(&r, file.attr_for(&r), endian, &mut buf)?;
            buf.extend_from_slice(r.trailing);
        }
        let _ = input;
        stats.records += 1;
        stats.data_bytes += buf.len() as u64;
        sink(&buf).map_err(|e| Error::io(r.offset, e))?;
    }
    Ok(stats)
}

/// Copies `file` into a file-mode perf.data written to `out`.
pub fn copy_to_file<W: Write + Seek>(
    file: &PerfFile<'_>,
    out: W,
    endian: Endian,
) -> Result<(W, CopyStats)> {
    let mut w = FileWriter::new(out, endian, file.attrs()).map_err(|e| Error::io(0, e))?;
    let stats = for_each_record(file, endian, |b| w.write_records(b))?;
    let out = w
        .finish(&copied_features(file, endian))
        .map_err(|e| Error::io(0, e))?;
    Ok((out, stats))
}

/// Copies `file` into a pipe-mode stream written to `out`.
pub fn copy_to_pipe<W: Write>(
    file: &PerfFile<'_>,
    out: W,
    endian: Endian,
) -> Result<(W, CopyStats)> {
    let mut w = PipeWriter::new(out, endian, file.attrs()).map_err(|e| Error::io(0, e))?;
    let feats: Vec<_> = copied_features(file, endian)
        .into_iter()
        // In a stream perf sends build-ids as records, not as a feature.
        .filter(|f| f.0 != FeatureId::BUILD_ID && f.0 != FeatureId::TRACING_DATA)
        // An empty section (old perf wrote e.g. CPUDESC with nothing in it)
        // carries nothing; in a file perf shrugs it off, but in a stream
        // perf 6.1 fails to process the HEADER_FEATURE and stops reading.
        .filter(|f| !f.1.is_empty())
        // The AUXTRACE index gives file offsets of AUXTRACE records, which
        // mean nothing in a stream; perf 6.1 reads it straight from the fd,
        // fails in pipe mode ("Failed to process auxtrace index") and stops.
        // perf record never sends it in a stream either.
        .filter(|f| f.0 != FeatureId::AUXTRACE)
        // A record holds at most 64 KiB; perf 6.1 does not send the bigger
        // ones (BPF_PROG_INFO, BPF_BTF) in a stream either.
        .filter(|f| f.1.len() + 16 + 7 <= usize::from(u16::MAX))
        .collect();
    w.write_features(&feats).map_err(|e| Error::io(0, e))?;
    // Tracepoint formats as perf record sends them in a stream.
    if let Some(f) = file.feature(FeatureId::TRACING_DATA) {
        w.write_tracing_data(f.data).map_err(|e| Error::io(0, e))?;
    }
    // Event names as EVENT_UPDATE (NAME) records, as perf record sends them
    // in a stream: perf 6.1 takes names from these, not from EVENT_DESC.
    if let Some(f) = file.feature(FeatureId::EVENT_DESC) {
        if let Ok(features::Feature::EventDesc(descs)) =
            features::decode(f.id, f.data, f.offset, file.endian())
        {
            let mut buf = Vec::new();
            for (i, d) in descs.events.iter().enumerate() {
                let id = d
                    .ids
                    .first()
                    .or_else(|| file.attrs().get(i).and_then(|a| a.ids.first()));
                // perf finds the only event whatever the id.
                let id = match id {
                    Some(&id) => id,
                    None if file.attrs().len() == 1 => 0,
                    None => continue,
                };
                let mut body = Vec::new();
                endian.put_u64(&mut body, 2); // PERF_EVENT_UPDATE__NAME
                endian.put_u64(&mut body, id);
                body.extend_from_slice(d.name.as_bytes());
                body.resize((body.len() + 1).next_multiple_of(8), 0);
                if crate::write::push_record(&mut buf, endian, RecordType::EVENT_UPDATE, 0, &body)
                    .is_err()
                {
                    continue;
                }
            }
            w.write_records(&buf).map_err(|e| Error::io(0, e))?;
        }
    }
    // Build-ids as HEADER_BUILD_ID records before the data, so that perf
    // matches DSOs by build-id as it does with the file's BUILD_ID feature.
    if let Some(f) = file.feature(FeatureId::BUILD_ID) {
        if let Ok(features::Feature::BuildId(entries)) =
            features::decode(f.id, f.data, f.offset, file.endian())
        {
            let mut buf = Vec::new();
            for b in &entries {
                features::put_build_id(&mut buf, endian, RecordType::HEADER_BUILD_ID.0, b);
            }
            w.write_records(&buf).map_err(|e| Error::io(0, e))?;
        }
    }
    let stats = for_each_record(file, endian, |b| w.write_records(b))?;
    let out = w.finish().map_err(|e| Error::io(0, e))?;
    Ok((out, stats))
}
