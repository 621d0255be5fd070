//! The narrow interface between Partita's storage logic and an ordered key-value engine.
//!
//! Everything above this trait — key encoding, transactions and conflict detection, group
//! commit, range partitions, the catalog — is ours and engine-independent. An engine only
//! stores byte keys in numbered keyspaces, reads them from consistent snapshots, and applies
//! batches atomically and durably. `FjallEngine` is the embedded default; an object-storage
//! engine can implement the same trait later without touching `sql` or `planner`.

mod fjall_engine;
mod fjall_scan;

pub use fjall_engine::FjallEngine;

use crate::error::Result;
use bytes::Bytes;
use std::ops::Bound;
use std::sync::Arc;

/// Identifies a keyspace (a table, index table, view or system keyspace).
pub type KeyspaceId = u32;

/// A half-open or closed range of encoded keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub lower: Bound<Bytes>,
    pub upper: Bound<Bytes>,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Every key starting with `prefix`.
    pub fn prefix(prefix: &[u8]) -> KeyRange {
        KeyRange {
            lower: Bound::Included(Bytes::copy_from_slice(prefix)),
            upper: match crate::keycodec::prefix_successor(prefix) {
                Some(succ) => Bound::Excluded(Bytes::from(succ)),
                None => Bound::Unbounded,
            },
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        let above = match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(l) => key >= l.as_ref(),
            Bound::Excluded(l) => key > l.as_ref(),
        };
        let below = match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(u) => key <= u.as_ref(),
            Bound::Excluded(u) => key < u.as_ref(),
        };
        above && below
    }

    /// Whether no key can lie in the range.
    pub fn is_empty(&self) -> bool {
        match (&self.lower, &self.upper) {
            (Bound::Included(l), Bound::Included(u)) => l > u,
            (Bound::Included(l), Bound::Excluded(u))
            | (Bound::Excluded(l), Bound::Included(u))
            | (Bound::Excluded(l), Bound::Excluded(u)) => l >= u,
            _ => false,
        }
    }
}

/// Scan direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub enum EngineOp {
    Put {
        keyspace: KeyspaceId,
        key: Bytes,
        value: Bytes,
    },
    Delete {
        keyspace: KeyspaceId,
        key: Bytes,
    },
}

/// The most entries [`EngineIter`] asks one [`EngineScan::next_batch`] call for.
pub const SCAN_BATCH: usize = 256;

/// What [`EngineIter`] asks for first, doubling up to [`SCAN_BATCH`]: a scan that stops
/// after a row or two (`LIMIT 1`, the newest entry of a partition) reads a few entries
/// past them, not a whole batch.
const FIRST_BATCH: usize = 16;

/// An engine's scan, read a batch at a time: one dynamic call per batch rather than per
/// entry (a scan of a million rows pays for the call, and for moving each entry through it,
/// a few thousand times instead of a million), and the natural unit for a backend whose
/// reads cross a network.
pub trait EngineScan: Send {
    /// Appends up to `max` (at least 1) next entries to `out`; appends none once the scan
    /// has ended.
    fn next_batch(&mut self, out: &mut EntryBatch, max: usize) -> Result<()>;
}

/// Where a key or a value lies: a byte range of one of a batch's buffers.
#[derive(Debug, Clone, Copy)]
struct Span {
    buf: usize,
    start: usize,
    end: usize,
}

/// The entries one [`EngineScan::next_batch`] call hands over. Each key and value is a byte
/// range of one of the batch's buffers: a scan that reads a table's blocks in place adds
/// each block once and then only offsets, instead of a reference-counted slice per key and
/// per value (four atomic operations per entry between reading it and dropping it).
#[derive(Debug, Default)]
pub struct EntryBatch {
    bufs: Vec<Bytes>,
    entries: Vec<(Span, Span)>,
}

impl EntryBatch {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn clear(&mut self) {
        self.bufs.clear();
        self.entries.clear();
    }

    /// Adds a buffer that [`push_in`](Self::push_in) then names by the number returned.
    pub fn add_buf(&mut self, buf: Bytes) -> usize {
        self.bufs.push(buf);
        self.bufs.len() - 1
    }

    /// Adds an entry whose key is a byte range of buffer `key_buf`, its value one of
    /// `value_buf`.
    #[inline]
    pub fn push_in(
        &mut self,
        key_buf: usize,
        key: std::ops::Range<usize>,
        value_buf: usize,
        value: std::ops::Range<usize>,
    ) {
        debug_assert!(key.end <= self.bufs[key_buf].len());
        debug_assert!(value.end <= self.bufs[value_buf].len());
        self.entries.push((
            Span {
                buf: key_buf,
                start: key.start,
                end: key.end,
            },
            Span {
                buf: value_buf,
                start: value.start,
                end: value.end,
            },
        ));
    }

    /// Adds an entry held in buffers of its own.
    pub fn push(&mut self, key: Bytes, value: Bytes) {
        let (key_len, value_len) = (key.len(), value.len());
        let key_buf = self.add_buf(key);
        let value_buf = self.add_buf(value);
        self.push_in(key_buf, 0..key_len, value_buf, 0..value_len);
    }

    #[inline]
    fn bytes(&self, span: Span) -> &[u8] {
        &self.bufs[span.buf][span.start..span.end]
    }

    /// Entry `i`, borrowed.
    #[inline]
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (key, value) = self.entries[i];
        (self.bytes(key), self.bytes(value))
    }

    /// Entry `i`, as slices that share the batch's buffers.
    fn get_owned(&self, i: usize) -> (Bytes, Bytes) {
        let (key, value) = self.entries[i];
        (
            self.bufs[key.buf].slice(key.start..key.end),
            self.bufs[value.buf].slice(value.start..value.end),
        )
    }
}

/// Any iterator of entries is a scan, a batch at a time.
struct IterScan<I>(I);

impl<I> EngineScan for IterScan<I>
where
    I: Iterator<Item = Result<(Bytes, Bytes)>> + Send,
{
    fn next_batch(&mut self, out: &mut EntryBatch, max: usize) -> Result<()> {
        for item in self.0.by_ref().take(max) {
            let (key, value) = item?;
            out.push(key, value);
        }
        Ok(())
    }
}

/// A streaming iterator over key-value pairs in key order (or reverse), over an engine's
/// batched scan. As an [`Iterator`] it hands out owned slices; [`next_entry`]
/// (Self::next_entry) lends each entry from its batch instead, for callers that decode it
/// on the spot.
pub struct EngineIter {
    scan: Box<dyn EngineScan>,
    batch: EntryBatch,
    /// The next entry of `batch` to hand out.
    pos: usize,
    /// How many entries the next batch asks for.
    next_size: usize,
    ended: bool,
}

impl EngineIter {
    pub fn new(scan: Box<dyn EngineScan>) -> EngineIter {
        EngineIter {
            scan,
            batch: EntryBatch::default(),
            pos: 0,
            next_size: FIRST_BATCH,
            ended: false,
        }
    }

    /// A scan over the entries an iterator yields.
    pub fn from_entries<I>(iter: I) -> EngineIter
    where
        I: Iterator<Item = Result<(Bytes, Bytes)>> + Send + 'static,
    {
        EngineIter::new(Box::new(IterScan(iter)))
    }

    /// Moves to the next entry, reading the next batch when this one is used up; `false`
    /// at the end.
    #[inline]
    fn advance(&mut self) -> Result<bool> {
        if self.pos == self.batch.len() {
            if self.ended {
                return Ok(false);
            }
            self.refill()?;
            if self.batch.is_empty() {
                return Ok(false);
            }
        }
        self.pos += 1;
        Ok(true)
    }

    #[cold]
    fn refill(&mut self) -> Result<()> {
        self.batch.clear();
        self.pos = 0;
        // After an error the scan ends there: entries read before it in the same batch are
        // dropped with it.
        let read = self.scan.next_batch(&mut self.batch, self.next_size);
        self.next_size = (self.next_size * 2).min(SCAN_BATCH);
        if read.is_err() {
            self.batch.clear();
        }
        self.ended = self.batch.is_empty() || read.is_err();
        read
    }

    /// The next entry, borrowed from its batch: no reference count changes hands.
    #[inline]
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        match self.advance() {
            Ok(true) => Some(Ok(self.batch.get(self.pos - 1))),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl Iterator for EngineIter {
    type Item = Result<(Bytes, Bytes)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.advance() {
            Ok(true) => Some(Ok(self.batch.get_owned(self.pos - 1))),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

pub trait Engine: Send + Sync + 'static {
    /// Creates the keyspace if it does not exist; idempotent.
    fn create_keyspace(&self, id: KeyspaceId) -> Result<()>;

    /// Removes a keyspace and all its data.
    fn drop_keyspace(&self, id: KeyspaceId) -> Result<()>;

    /// The keyspaces that exist.
    fn keyspaces(&self) -> Result<Vec<KeyspaceId>>;

    /// A consistent, point-in-time view across all keyspaces.
    fn snapshot(&self) -> Arc<dyn EngineSnapshot>;

    /// Applies `ops` atomically. When `durable`, the batch is on stable storage before this
    /// returns Ok, and it becomes visible to snapshots only after that. After an error the
    /// engine refuses further writes.
    fn write(&self, ops: Vec<EngineOp>, durable: bool) -> Result<()>;

    /// Bytes the keyspace occupies on stable storage, as far as the engine knows it cheaply;
    /// 0 for an unknown keyspace.
    fn disk_space(&self, id: KeyspaceId) -> u64;
}

pub trait EngineSnapshot: Send + Sync {
    fn get(&self, keyspace: KeyspaceId, key: &[u8]) -> Result<Option<Bytes>>;

    fn scan(
        &self,
        keyspace: KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> Result<EngineIter>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::Mutex;

    /// Entries `0..len`, recording the size of each batch asked for; fails at `fail_at`.
    struct Counted {
        next: u32,
        len: u32,
        fail_at: Option<u32>,
        asked: Arc<Mutex<Vec<usize>>>,
    }

    impl EngineScan for Counted {
        fn next_batch(&mut self, out: &mut EntryBatch, max: usize) -> Result<()> {
            self.asked.lock().unwrap().push(max);
            for _ in 0..max {
                if self.fail_at == Some(self.next) {
                    return Err(Error::Engine("read failed".into()));
                }
                if self.next == self.len {
                    break;
                }
                let key = Bytes::copy_from_slice(&self.next.to_be_bytes());
                out.push(key.clone(), key);
                self.next += 1;
            }
            Ok(())
        }
    }

    fn counted(len: u32, fail_at: Option<u32>) -> (EngineIter, Arc<Mutex<Vec<usize>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let scan = Counted {
            next: 0,
            len,
            fail_at,
            asked: Arc::clone(&asked),
        };
        (EngineIter::new(Box::new(scan)), asked)
    }

    #[test]
    fn batches_start_small_and_double() {
        let (mut iter, asked) = counted(1000, None);
        assert!(iter.next().is_some());
        assert_eq!(*asked.lock().unwrap(), vec![FIRST_BATCH]);

        let (iter, asked) = counted(1000, None);
        let keys: Vec<u32> = iter
            .map(|e| u32::from_be_bytes(e.unwrap().0.as_ref().try_into().unwrap()))
            .collect();
        assert_eq!(keys, (0..1000).collect::<Vec<_>>());
        assert_eq!(
            *asked.lock().unwrap(),
            vec![16, 32, 64, 128, 256, 256, 256, 256]
        );
    }

    #[test]
    fn an_error_ends_the_scan_after_the_entries_before_its_batch() {
        let (iter, _) = counted(1000, Some(20));
        let items: Vec<Result<(Bytes, Bytes)>> = iter.collect();
        // The first batch (16 entries) arrived whole; the second failed at entry 20.
        assert_eq!(items.len(), FIRST_BATCH + 1);
        assert!(items[..FIRST_BATCH].iter().all(|r| r.is_ok()));
        assert!(items[FIRST_BATCH].is_err());
    }
}
