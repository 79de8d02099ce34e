//! Arbitrary bytes through the whole reader: parse, records (raw and
//! ordered), record decoding, every feature, and a copy to a new file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prec_format::{convert, features, PerfFile};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = PerfFile::parse(data) else {
        return;
    };
    for r in file.records().take(100_000) {
        match r {
            Ok(r) => {
                let _ = file.parse_record(&r);
            }
            Err(_) => break,
        }
    }
    for r in file.ordered_records().take(100_000) {
        match r {
            Ok(r) => {
                let _ = file.parse_record(&r);
            }
            Err(_) => break,
        }
    }
    for f in file.features() {
        let _ = features::decode(f.id, f.data, f.offset, file.endian());
    }
    let _ = convert::copy_to_file(&file, std::io::Cursor::new(Vec::new()), file.endian());
});
