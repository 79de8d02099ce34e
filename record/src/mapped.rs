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

    /// Drops the pages before `end` from the resident set, so that reading
    /// a large file once does not keep all of it in memory (perf reads its
    /// input through a sliding window for the same reason). The bytes stay
    /// readable: a later access reads them from the file again.
    pub fn release_prefix(&self, end: usize) {
        let end = end.min(self.map.len()) & !4095;
        if end == 0 {
            return;
        }
        // SAFETY: the mapping is a read-only file mapping that was never
        // written, so MADV_DONTNEED only drops clean page-cache references;
        // later reads fault the same file contents back in.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, end)
        };
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
