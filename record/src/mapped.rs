//! Read-only memory maps of files, for the readers of perf.data and of
//! binaries. Mapping is `unsafe` (another process could truncate the file),
//! and prec keeps every `unsafe` in this crate, so the map lives here and the
//! other crates see only a byte slice.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

/// A file mapped read-only; dereferences to its bytes.
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps `file` read-only.
    pub fn map(file: &File) -> io::Result<MappedFile> {
        // SAFETY: the mapping is read-only and only read through `Deref`. It
        // is unsound only if another process truncates or rewrites the file
        // while mapped, which perf and every mmap-based reader accept too; the
        // worst outcome is SIGBUS, never a silent wrong answer we produce.
        let map = unsafe { memmap2::Mmap::map(file) }?;
        Ok(MappedFile { map })
    }

    /// Opens and maps `path`.
    pub fn open(path: &Path) -> io::Result<MappedFile> {
        MappedFile::map(&File::open(path)?)
    }
}

impl Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}
