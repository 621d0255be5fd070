//! Forward range scans that read a fjall keyspace's tables one after another, block by block,
//! in place.
//!
//! fjall's range iterator puts every source (each table run, each memtable) through a heap
//! merge and then a version filter that peeks at the next entry, one entry at a time, even
//! when one table is all there is; and it hands each entry out as a reference-counted slice
//! of its block for the key and another for the value. Most ranges need less: after
//! compaction, or after rows are loaded in key order, the tables a range overlaps do not
//! overlap each other, so each key lives in at most one of them and reading them in key order
//! needs no merge. The active memtable is then the only other source, merged in two ways.
//!
//! Each table is read here a data block at a time, through the block cache as lsm-tree reads
//! it: the block's entries are decoded in place into byte ranges of the block, and a batch
//! hands the block over once with those ranges (see [`EntryBatch`]). On the benchmark's 1M
//! rows the store's full scan went from 157 to 112 ns per row without the merge, and
//! reading blocks in place takes the key and value slices' reference counting off each row.
//!
//! The scan sees what the general iterator sees at the snapshot's sequence number: for each
//! key, the newest version written before the snapshot, unless that version deletes it.
//! When the shape does not fit (sealed memtables waiting for a flush, overlapping tables,
//! a key-value separated tree), [`forward_scan`] returns `None` and the caller falls back
//! to the general iterator.
//!
//! It uses lsm-tree types fjall exposes without documenting (`Table` and its regions and
//! cache, `Block`, `DataBlock`, `IndexBlock`, `InternalValue`, `Memtable::items`); the
//! versions are pinned in Cargo.lock, and property tests in this module check the result
//! against fjall's own iterator.

use super::{EngineIter, EngineScan, EntryBatch, KeyRange};
use crate::error::{Error, Result};
use bytes::Bytes;
use fjall::{AbstractTree, Keyspace, TreeType};
use lsm_tree::table::block::BlockType;
use lsm_tree::table::util::SliceIndexes;
use lsm_tree::table::{Block, BlockHandle, DataBlock, IndexBlock};
use lsm_tree::{GlobalTableId, InternalValue, Memtable, SeqNo, Slice, Table, ValueType};
use std::cmp::Ordering;
use std::fs::File;
use std::ops::{Bound, Range};
use std::sync::Arc;

/// How many memtable entries one seek into the skip list collects.
const MEMTABLE_CHUNK: usize = 256;

/// How many data block handles the first read of a table's index collects, doubling up to
/// [`MAX_HANDLES`] on each further read: a short range needs a block or two.
const FIRST_HANDLES: usize = 2;
const MAX_HANDLES: usize = 64;

/// Which of a keyspace's table sets snapshots may read directly.
///
/// lsm-tree serves a snapshot from the "super version" (memtables and tables) that was
/// current when the snapshot was taken, and a compaction that installs a new table set may
/// drop versions of a key that only the older sets still hold for older snapshots. The
/// direct scan reads the current table set, so it runs only for snapshots taken after that
/// set was installed: the watch remembers the set (its version number) it last saw current
/// and the database's visible sequence number read after seeing it. A snapshot at or past
/// that number was taken after the set was installed. A snapshot taken before the set it
/// would read was first seen falls back to fjall's iterator, which picks the snapshot's own
/// super version.
#[derive(Default)]
pub(super) struct VersionWatch(std::sync::Mutex<Option<(u64, SeqNo)>>);

impl VersionWatch {
    /// Whether a snapshot at `snapshot` reads table set `version`, the current one;
    /// `visible` reads the database's visible sequence number.
    fn admits(&self, version: u64, snapshot: SeqNo, visible: impl FnOnce() -> SeqNo) -> bool {
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match *seen {
            Some((v, since)) if v == version => snapshot >= since,
            _ => {
                *seen = Some((version, visible()));
                false
            }
        }
    }
}

/// A forward scan of `range` in `keyspace` at `snapshot`, or `None` when the keyspace's
/// current shape needs fjall's general merge. `watch` is the keyspace's; `visible` reads
/// the database's visible sequence number.
pub(super) fn forward_scan(
    snapshot: &fjall::Snapshot,
    keyspace: &Keyspace,
    watch: &VersionWatch,
    visible: impl FnOnce() -> SeqNo,
    range: &KeyRange,
) -> Option<EngineIter> {
    let tree = &keyspace.tree;
    if tree.tree_type() != TreeType::Standard {
        return None;
    }
    // One consistent view of (active memtable, tables): with no sealed memtable and no
    // rotation between the two reads of the active memtable, no flush can have moved rows
    // out of the memtable read here into a table the version read here lacks.
    let memtable = tree.active_memtable();
    if tree.sealed_memtable_count() != 0 {
        return None;
    }
    let version = tree.current_version();
    if tree.active_memtable().id() != memtable.id() {
        return None;
    }
    let seqno = snapshot.seqno();
    if !watch.admits(version.id(), seqno, visible) {
        return None;
    }
    let mut tables: Vec<Table> = version
        .iter_tables()
        .filter(|t| {
            overlaps(
                t.metadata.key_range.min(),
                t.metadata.key_range.max(),
                range,
            )
        })
        .cloned()
        .collect();
    tables.sort_by(|a, b| a.metadata.key_range.min().cmp(b.metadata.key_range.min()));
    if tables
        .windows(2)
        .any(|w| w[0].metadata.key_range.max() >= w[1].metadata.key_range.min())
    {
        return None;
    }
    let memtable = MemtableChunks::new(memtable, range);
    Some(EngineIter::new(Box::new(DirectScan {
        _snapshot: snapshot.clone(),
        tables: TableRun {
            tables: tables.into_iter(),
            tree_id: tree.id(),
            lower: range.lower.clone(),
            upper: range.upper.clone(),
            seqno,
            current: None,
            opened: 0,
            current_max: Slice::empty(),
            block: BlockEntries::default(),
            blocks_read: 0,
            last_key: None,
            past_lower: false,
            ended: false,
        },
        memtable: (!memtable.exhausted).then_some(memtable),
        memtable_head: None,
        memtable_newest: Newest::new(seqno),
        table_first: None,
    })))
}

/// Whether the inclusive key range `[min, max]` shares a key with `range`.
fn overlaps(min: &[u8], max: &[u8], range: &KeyRange) -> bool {
    let above_lower = match &range.lower {
        Bound::Included(k) => max >= k.as_ref(),
        Bound::Excluded(k) => max > k.as_ref(),
        Bound::Unbounded => true,
    };
    let below_upper = match &range.upper {
        Bound::Included(k) => min <= k.as_ref(),
        Bound::Excluded(k) => min < k.as_ref(),
        Bound::Unbounded => true,
    };
    above_lower && below_upper
}

fn engine_err(e: lsm_tree::Error) -> Error {
    Error::Engine(e.to_string())
}

/// One table being read: where its data blocks are, found through its block index a few
/// at a time.
struct OpenTable {
    table: Table,
    id: GlobalTableId,
    /// Opened on the first block the cache does not hold.
    file: Option<File>,
    /// Data blocks collected from the index with the last key of each, and the next one
    /// to read.
    handles: Vec<(BlockHandle, Vec<u8>)>,
    next: usize,
    /// Where the next read of the index resumes: after the data block at this offset,
    /// whose last key is this. `None` before the first read.
    resume: Option<(Vec<u8>, u64)>,
    /// How many handles the next read of the index collects.
    chunk: usize,
    /// The index has no more data blocks.
    index_done: bool,
    /// No data block has been read yet: the first one is sought to the lower bound.
    first_block: bool,
}

impl OpenTable {
    fn new(table: Table, tree_id: lsm_tree::TreeId) -> OpenTable {
        let id = GlobalTableId::from((tree_id, table.id()));
        OpenTable {
            table,
            id,
            file: None,
            handles: Vec::new(),
            next: 0,
            resume: None,
            chunk: FIRST_HANDLES,
            index_done: false,
            first_block: true,
        }
    }

    /// A block of this table, through the block cache as lsm-tree loads it.
    fn load(&mut self, handle: BlockHandle, ty: BlockType) -> Result<Block> {
        if let Some(block) = self.table.cache.get_block(self.id, handle.offset()) {
            return Ok(block);
        }
        let compression = match ty {
            BlockType::Data => self.table.metadata.data_block_compression,
            _ => self.table.metadata.index_block_compression,
        };
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(File::open(&*self.table.path)?),
        };
        let block = Block::from_file(file, handle, compression).map_err(engine_err)?;
        if block.header.block_type != ty {
            return Err(Error::Corrupt(format!(
                "table {}: a {:?} block where a {ty:?} block belongs",
                self.table.id(),
                block.header.block_type
            )));
        }
        self.table
            .cache
            .insert_block(self.id, handle.offset(), block.clone());
        Ok(block)
    }

    /// The next data block's handle, and whether all of its keys lie below `upper`;
    /// reads more of the index when the collected handles are used up.
    fn next_handle(
        &mut self,
        lower: &Bound<Bytes>,
        upper: &Bound<Bytes>,
    ) -> Result<Option<(BlockHandle, bool)>> {
        if self.next == self.handles.len() {
            if self.index_done {
                return Ok(None);
            }
            self.collect_handles(lower)?;
            if self.handles.is_empty() {
                self.index_done = true;
                return Ok(None);
            }
        }
        let (handle, last_key) = &self.handles[self.next];
        self.next += 1;
        let below_upper = match upper {
            Bound::Included(u) => last_key.as_slice() <= u.as_ref(),
            Bound::Excluded(u) => last_key.as_slice() < u.as_ref(),
            Bound::Unbounded => true,
        };
        Ok(Some((*handle, below_upper)))
    }

    /// Collects the next few data block handles from the index: from the first block that
    /// can hold the lower bound, or after the last one collected. A table's index is one
    /// block listing its data blocks, or (for large tables) a top-level block listing index
    /// blocks that list them.
    fn collect_handles(&mut self, lower: &Bound<Bytes>) -> Result<()> {
        self.handles.clear();
        self.next = 0;
        let needle: Option<Vec<u8>> = match &self.resume {
            Some((key, _)) => Some(key.clone()),
            None => match lower {
                Bound::Included(k) | Bound::Excluded(k) => Some(k.to_vec()),
                Bound::Unbounded => None,
            },
        };
        let after = self.resume.as_ref().map(|(_, offset)| *offset);
        let top = IndexBlock::new(self.load(self.table.regions.tli, BlockType::Index)?);
        let mut found: Vec<(BlockHandle, Vec<u8>)> = Vec::new();
        let want = self.chunk;
        let collect = |block: &IndexBlock, found: &mut Vec<(BlockHandle, Vec<u8>)>| {
            let bytes: &[u8] = &block.inner.data;
            let mut items = block.iter();
            if let Some(needle) = &needle {
                // The first entry whose last key is at or after the needle.
                items.seek(needle, SeqNo::MAX);
            }
            for item in items {
                if after.is_some_and(|offset| item.offset.0 <= offset) {
                    continue;
                }
                let handle = BlockHandle::new(item.offset, item.size);
                found.push((handle, joined(bytes, item.prefix.as_ref(), &item.end_key)));
                if found.len() == want {
                    return true;
                }
            }
            false
        };
        if self.table.regions.index.is_none() {
            collect(&top, &mut found);
        } else {
            let mut parts = Vec::new();
            let mut items = top.iter();
            if let Some(needle) = &needle {
                items.seek(needle, SeqNo::MAX);
            }
            for item in items {
                parts.push(BlockHandle::new(item.offset, item.size));
            }
            for part in parts {
                let block = IndexBlock::new(self.load(part, BlockType::Index)?);
                if collect(&block, &mut found) {
                    break;
                }
            }
        }
        if let Some((handle, key)) = found.last() {
            self.resume = Some((key.clone(), handle.offset().0));
        }
        self.handles = found;
        self.chunk = (self.chunk * 2).min(MAX_HANDLES);
        Ok(())
    }
}

/// A key stored as a prefix shared with the keys before it and a rest, or whole.
fn joined(bytes: &[u8], prefix: Option<&SliceIndexes>, rest: &SliceIndexes) -> Vec<u8> {
    let mut key = Vec::new();
    join_into(&mut key, bytes, prefix, rest);
    key
}

/// Appends the key [`joined`] returns to `out`.
fn join_into(out: &mut Vec<u8>, bytes: &[u8], prefix: Option<&SliceIndexes>, rest: &SliceIndexes) {
    if let Some(p) = prefix {
        out.extend_from_slice(&bytes[p.0..p.1]);
    }
    out.extend_from_slice(&bytes[rest.0..rest.1]);
}

/// Where an entry of the current block lies: its key in the block or in the block's
/// rebuilt keys, its value in the block.
#[derive(Debug, Clone)]
struct Item {
    key: Range<usize>,
    key_rebuilt: bool,
    value: Range<usize>,
    seqno: SeqNo,
}

/// The entries of one data block the scan returns: the newest visible version of each key
/// in range, deletions left out.
#[derive(Default)]
struct BlockEntries {
    data: Bytes,
    /// Keys stored as a suffix of the key before them (blocks written with a restart
    /// interval above 1), rebuilt whole.
    rebuilt: Bytes,
    items: Vec<Item>,
    next: usize,
}

impl BlockEntries {
    #[inline]
    fn key(&self, item: &Item) -> &[u8] {
        if item.key_rebuilt {
            &self.rebuilt[item.key.clone()]
        } else {
            &self.data[item.key.clone()]
        }
    }
}

/// The newest visible version of each key in key-disjoint tables, one table after another,
/// a block at a time.
struct TableRun {
    tables: std::vec::IntoIter<Table>,
    tree_id: lsm_tree::TreeId,
    lower: Bound<Bytes>,
    upper: Bound<Bytes>,
    seqno: SeqNo,
    current: Option<OpenTable>,
    /// How many tables were opened, and the largest key of the last one.
    opened: usize,
    current_max: Slice,
    block: BlockEntries,
    /// How many blocks were read: a batch adds a block's buffers once per block.
    blocks_read: u64,
    /// The key of the last version decided on (returned or deleted): older versions of it
    /// that continue in the next block are skipped.
    last_key: Option<Vec<u8>>,
    /// A key above the lower bound was read: those after it need no comparison.
    past_lower: bool,
    /// The range's end was reached.
    ended: bool,
}

impl TableRun {
    /// Whether there is a current entry, reading the next block (or table) when this
    /// block is used up.
    #[inline]
    fn has_head(&mut self) -> Result<bool> {
        while self.block.next == self.block.items.len() {
            if !self.read_block()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The current entry; only after [`has_head`](Self::has_head) said there is one.
    #[inline]
    fn head(&self) -> &Item {
        &self.block.items[self.block.next]
    }

    /// Reads the next data block that has entries to return; `false` at the end.
    fn read_block(&mut self) -> Result<bool> {
        loop {
            if self.ended {
                return Ok(false);
            }
            let handle = match self.current.as_mut() {
                Some(open) => open.next_handle(&self.lower, &self.upper)?,
                None => None,
            };
            let Some((handle, below_upper)) = handle else {
                let Some(table) = self.tables.next() else {
                    self.ended = true;
                    return Ok(false);
                };
                self.current_max = table.metadata.key_range.max().clone();
                self.current = Some(OpenTable::new(table, self.tree_id));
                self.opened += 1;
                continue;
            };
            let open = self.current.as_mut().expect("a table is open");
            let block = DataBlock::new(open.load(handle, BlockType::Data)?);
            let seek = std::mem::replace(&mut open.first_block, false);
            let global_seqno = open.table.global_seqno();
            self.decode(&block, seek, below_upper, global_seqno)?;
            self.blocks_read += 1;
            if !self.block.items.is_empty() {
                return Ok(true);
            }
        }
    }

    /// Decodes `block`'s entries that the scan returns into [`BlockEntries`].
    /// Keys are compared with the lower bound until one lies above it, and with the upper
    /// bound only in a block whose last key does not lie below it.
    fn decode(
        &mut self,
        block: &DataBlock,
        seek: bool,
        below_upper: bool,
        global_seqno: SeqNo,
    ) -> Result<()> {
        let data: &[u8] = &block.inner.data;
        let mut items = std::mem::take(&mut self.block.items);
        items.clear();
        let mut rebuilt = Vec::new();
        // The last version decided on in this block: (rebuilt, key range).
        let mut last: Option<(bool, Range<usize>)> = None;
        let mut entries = block.iter();
        if seek && let Bound::Included(k) | Bound::Excluded(k) = &self.lower {
            entries.seek(k);
        }
        for entry in entries {
            let seqno = entry.seqno + global_seqno;
            // Written at or after the snapshot: not visible to it.
            if seqno >= self.seqno {
                continue;
            }
            let (key_rebuilt, key) = match &entry.prefix {
                None => (false, entry.key.0..entry.key.1),
                Some(_) => {
                    let start = rebuilt.len();
                    join_into(&mut rebuilt, data, entry.prefix.as_ref(), &entry.key);
                    (true, start..rebuilt.len())
                }
            };
            let k: &[u8] = if key_rebuilt {
                &rebuilt[key.clone()]
            } else {
                &data[key.clone()]
            };
            if !self.past_lower {
                let below = match &self.lower {
                    Bound::Included(l) => k < l.as_ref(),
                    Bound::Excluded(l) => k <= l.as_ref(),
                    Bound::Unbounded => false,
                };
                if below {
                    continue;
                }
                self.past_lower = true;
            }
            let above = !below_upper
                && match &self.upper {
                    Bound::Included(u) => k > u.as_ref(),
                    Bound::Excluded(u) => k >= u.as_ref(),
                    Bound::Unbounded => false,
                };
            if above {
                self.ended = true;
                break;
            }
            // An older version of the key decided last. Keys that follow each other mostly
            // differ in their last byte: comparing it first saves comparing the rest.
            let previous: Option<&[u8]> = match &last {
                Some((true, r)) => Some(&rebuilt[r.clone()]),
                Some((false, r)) => Some(&data[r.clone()]),
                None => self.last_key.as_deref(),
            };
            if previous.is_some_and(|p| p.last() == k.last() && p == k) {
                continue;
            }
            last = Some((key_rebuilt, key.clone()));
            match entry.value_type {
                ValueType::Value => items.push(Item {
                    key,
                    key_rebuilt,
                    value: entry.value.as_ref().map_or(0..0, |v| v.0..v.1),
                    seqno,
                }),
                ValueType::Tombstone | ValueType::WeakTombstone => {}
                ValueType::Indirection => {
                    return Err(Error::Engine(
                        "a blob indirection in a tree without key-value separation".into(),
                    ));
                }
            }
        }
        if let Some((is_rebuilt, r)) = last {
            let key = if is_rebuilt { &rebuilt[r] } else { &data[r] };
            let held = self.last_key.get_or_insert_with(Vec::new);
            held.clear();
            held.extend_from_slice(key);
        }
        self.block = BlockEntries {
            data: Bytes::from(block.inner.data.clone()),
            rebuilt: Bytes::from(rebuilt),
            items,
            next: 0,
        };
        Ok(())
    }
}

/// The memtable's entries in a range, collected a chunk at a time: each chunk is one seek
/// into the skip list, so nothing borrows the memtable between calls.
struct MemtableChunks {
    memtable: Arc<Memtable>,
    /// Where the next chunk starts; the key of an entry built only for its ordering.
    lower: Bound<InternalValue>,
    upper: Bound<InternalValue>,
    chunk: std::vec::IntoIter<InternalValue>,
    exhausted: bool,
}

impl MemtableChunks {
    fn new(memtable: Arc<Memtable>, range: &KeyRange) -> MemtableChunks {
        // Entries order by key, then by sequence number descending: these bounds take in
        // every version of the keys at the ends, as fjall's own range does.
        let at = |key: &Bytes, seqno, value_type| {
            InternalValue::from_components(key.clone(), Slice::empty(), seqno, value_type)
        };
        let lower = match &range.lower {
            Bound::Included(k) => Bound::Included(at(k, SeqNo::MAX, ValueType::Tombstone)),
            Bound::Excluded(k) => Bound::Excluded(at(k, 0, ValueType::Tombstone)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let upper = match &range.upper {
            Bound::Included(k) => Bound::Included(at(k, 0, ValueType::Value)),
            Bound::Excluded(k) => Bound::Excluded(at(k, SeqNo::MAX, ValueType::Value)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let exhausted = memtable.items.is_empty();
        MemtableChunks {
            memtable,
            lower,
            upper,
            chunk: Vec::new().into_iter(),
            exhausted,
        }
    }

    fn refill(&mut self) {
        let bounds = (
            self.lower.as_ref().map(|v| &v.key),
            self.upper.as_ref().map(|v| &v.key),
        );
        let chunk: Vec<InternalValue> = self
            .memtable
            .items
            .range(bounds)
            .take(MEMTABLE_CHUNK)
            .map(|e| InternalValue {
                key: e.key().clone(),
                value: e.value().clone(),
            })
            .collect();
        match chunk.last() {
            Some(last) if chunk.len() == MEMTABLE_CHUNK => {
                self.lower = Bound::Excluded(InternalValue {
                    key: last.key.clone(),
                    value: Slice::empty(),
                });
            }
            _ => self.exhausted = true,
        }
        self.chunk = chunk.into_iter();
    }
}

impl Iterator for MemtableChunks {
    type Item = InternalValue;

    fn next(&mut self) -> Option<InternalValue> {
        loop {
            if let Some(v) = self.chunk.next() {
                return Some(v);
            }
            if self.exhausted {
                return None;
            }
            self.refill();
        }
    }
}

/// Picks, for each key, the newest version visible at `seqno` (which may delete the key)
/// from entries that arrive by key, newest version first.
struct Newest {
    seqno: SeqNo,
    last: Option<Vec<u8>>,
}

impl Newest {
    fn new(seqno: SeqNo) -> Newest {
        Newest { seqno, last: None }
    }

    fn admits(&mut self, entry: &InternalValue) -> bool {
        // Written at or after the snapshot: not visible to it.
        if entry.key.seqno >= self.seqno {
            return false;
        }
        let key: &[u8] = &entry.key.user_key;
        match &mut self.last {
            // An older version. Keys that follow each other mostly differ in their last
            // byte: comparing it first saves the call to compare the rest.
            Some(last) if last.last() == key.last() && last.as_slice() == key => false,
            Some(last) => {
                last.clear();
                last.extend_from_slice(key);
                true
            }
            None => {
                self.last = Some(key.to_vec());
                true
            }
        }
    }
}

struct DirectScan {
    /// Holds fjall's garbage-collection watermark at the snapshot while the scan runs.
    _snapshot: fjall::Snapshot,
    tables: TableRun,
    /// `None` once the memtable has nothing more in the range: the common case, where the
    /// scan is the table run alone.
    memtable: Option<MemtableChunks>,
    memtable_head: Option<InternalValue>,
    memtable_newest: Newest,
    /// Whether all of the open table's entries sort before the memtable head, so that they
    /// are returned without comparing each with it (rows loaded in key order: the tables
    /// hold the start of the range, the memtable its end). Decided once per open table and
    /// memtable head: `(table, answer)`, forgotten when the head moves on.
    table_first: Option<(usize, bool)>,
}

/// The buffers of the table run's current block in the batch being filled: the number of
/// the block (see `TableRun::blocks_read`), then its data and its rebuilt keys.
type BlockBufs = Option<(u64, usize, usize)>;

impl DirectScan {
    /// Moves the table run's current entry into `out`, adding its block's buffers to the
    /// batch the first time one of the block's entries goes there.
    #[inline]
    fn take_table(&mut self, out: &mut EntryBatch, bufs: &mut BlockBufs) {
        let run = &mut self.tables;
        let (data, rebuilt) = match *bufs {
            Some((block, data, rebuilt)) if block == run.blocks_read => (data, rebuilt),
            _ => {
                let data = out.add_buf(run.block.data.clone());
                let rebuilt = out.add_buf(run.block.rebuilt.clone());
                *bufs = Some((run.blocks_read, data, rebuilt));
                (data, rebuilt)
            }
        };
        let item = &run.block.items[run.block.next];
        let key_buf = if item.key_rebuilt { rebuilt } else { data };
        out.push_in(key_buf, item.key.clone(), data, item.value.clone());
        run.block.next += 1;
    }

    /// Returns the memtable head, unless it deletes its key.
    fn take_memtable(&mut self, out: &mut EntryBatch) -> Result<()> {
        let Some(head) = self.memtable_head.take() else {
            return Ok(());
        };
        match head.key.value_type {
            ValueType::Value => out.push(Bytes::from(head.key.user_key), Bytes::from(head.value)),
            ValueType::Tombstone | ValueType::WeakTombstone => {}
            ValueType::Indirection => {
                return Err(Error::Engine(
                    "a blob indirection in a tree without key-value separation".into(),
                ));
            }
        }
        Ok(())
    }
}

impl EngineScan for DirectScan {
    fn next_batch(&mut self, out: &mut EntryBatch, max: usize) -> Result<()> {
        let end = out.len() + max;
        let mut bufs: BlockBufs = None;
        while out.len() < end {
            let Some(memtable) = self.memtable.as_mut() else {
                // The table run alone: a block's entries one after another.
                if !self.tables.has_head()? {
                    break;
                }
                while out.len() < end && self.tables.block.next < self.tables.block.items.len() {
                    self.take_table(out, &mut bufs);
                }
                continue;
            };
            if self.memtable_head.is_none() {
                self.memtable_head = memtable.find(|e| self.memtable_newest.admits(e));
                self.table_first = None;
                if self.memtable_head.is_none() {
                    self.memtable = None;
                    continue;
                }
            }
            if !self.tables.has_head()? {
                self.take_memtable(out)?;
                continue;
            }
            let memtable_key: &[u8] = match &self.memtable_head {
                Some(m) => &m.key.user_key,
                None => unreachable!("the memtable head was filled above"),
            };
            let table = self.tables.opened;
            let table_first = match self.table_first {
                Some((n, first)) if n == table => first,
                _ => {
                    let first = self.tables.current_max.as_ref() < memtable_key;
                    self.table_first = Some((table, first));
                    first
                }
            };
            if table_first {
                self.take_table(out, &mut bufs);
                continue;
            }
            let head = self.tables.head();
            match self.tables.block.key(head).cmp(memtable_key) {
                Ordering::Less => self.take_table(out, &mut bufs),
                Ordering::Greater => self.take_memtable(out)?,
                // The same key in both: the newer version wins (the memtable's, as tables
                // hold only flushed, older writes).
                Ordering::Equal => {
                    let memtable_seqno = self.memtable_head.as_ref().map_or(0, |m| m.key.seqno);
                    if head.seqno > memtable_seqno {
                        self.memtable_head = None;
                        self.take_table(out, &mut bufs);
                    } else {
                        self.tables.block.next += 1;
                        self.take_memtable(out)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::{Database, KeyspaceCreateOptions, Readable};
    use proptest::prelude::*;

    /// The table layouts a scan must read alike: keys stored whole or as suffixes, one
    /// entry per block or many (so that a key's versions span blocks), and a one-level or
    /// partitioned block index.
    fn options(restart_one: bool, tiny_blocks: bool, partitioned: bool) -> KeyspaceCreateOptions {
        use fjall::config::{BlockSizePolicy, PartitioningPolicy, RestartIntervalPolicy};
        let mut o = KeyspaceCreateOptions::default()
            .index_block_partitioning_policy(PartitioningPolicy::all(partitioned));
        if restart_one {
            o = o.data_block_restart_interval_policy(RestartIntervalPolicy::all(1));
        }
        if tiny_blocks {
            o = o.data_block_size_policy(BlockSizePolicy::all(32));
        }
        o
    }

    /// The direct scan at `snap`, if it runs, read both ways: lent entries and owned ones.
    fn read_both(
        db: &Database,
        ks: &Keyspace,
        watch: &VersionWatch,
        snap: &fjall::Snapshot,
        range: &KeyRange,
    ) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        let scan = || forward_scan(snap, ks, watch, || db.visible_seqno(), range);
        let mut lent = Vec::new();
        let mut scan_lent = scan()?;
        while let Some(entry) = scan_lent.next_entry() {
            let (k, v) = entry.unwrap();
            lent.push((k.to_vec(), v.to_vec()));
        }
        let owned: Vec<(Vec<u8>, Vec<u8>)> = scan()?
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert_eq!(lent, owned);
        Some(owned)
    }

    fn fjall_range(
        snap: &fjall::Snapshot,
        ks: &Keyspace,
        range: &KeyRange,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let bounds = (
            range.lower.as_ref().map(|b| b.as_ref()),
            range.upper.as_ref().map(|b| b.as_ref()),
        );
        snap.range::<&[u8], _>(ks, bounds)
            .map(|g| {
                let (k, v) = g.into_inner().unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect()
    }

    #[derive(Debug, Clone)]
    enum Step {
        Put(u8, u8),
        Delete(u8),
        Flush,
        Compact,
        Snapshot,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (0u8..40, any::<u8>()).prop_map(|(k, v)| Step::Put(k, v)),
            2 => (0u8..40).prop_map(Step::Delete),
            1 => Just(Step::Flush),
            1 => Just(Step::Compact),
            1 => Just(Step::Snapshot),
        ]
    }

    fn key(k: u8) -> Vec<u8> {
        vec![b'k', k]
    }

    fn bound(b: Option<(u8, bool)>) -> Bound<Bytes> {
        match b {
            None => Bound::Unbounded,
            Some((k, true)) => Bound::Included(Bytes::from(key(k))),
            Some((k, false)) => Bound::Excluded(Bytes::from(key(k))),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// At every snapshot taken along the way, the direct scan (when it applies) returns
        /// exactly what fjall's own range iterator returns.
        #[test]
        fn direct_scan_matches_fjall(
            steps in proptest::collection::vec(step(), 1..80),
            lower in proptest::option::of((0u8..40, any::<bool>())),
            upper in proptest::option::of((0u8..40, any::<bool>())),
            layout in (any::<bool>(), any::<bool>(), any::<bool>()),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let db = Database::builder(dir.path()).open().unwrap();
            let (restart_one, tiny_blocks, partitioned) = layout;
            let ks = db
                .keyspace("t", || options(restart_one, tiny_blocks, partitioned))
                .unwrap();
            let range = KeyRange { lower: bound(lower), upper: bound(upper) };
            // No snapshot from the start: it would hold compaction's garbage-collection watermark
            // at 0, and no version an older snapshot needs would ever be dropped.
            let mut snapshots = Vec::new();
            for s in &steps {
                match s {
                    Step::Put(k, v) => ks.insert(key(*k), vec![*v; 1 + *v as usize % 7]).unwrap(),
                    Step::Delete(k) => ks.remove(key(*k)).unwrap(),
                    Step::Flush => ks.rotate_memtable_and_wait().unwrap(),
                    Step::Compact => ks.major_compact().unwrap(),
                    Step::Snapshot => snapshots.push(db.snapshot()),
                }
            }
            snapshots.push(db.snapshot());
            prop_assume!(!range.is_empty());
            let watch = VersionWatch::default();
            // The watch first sees the current table set; then the snapshots taken after
            // it was installed read it directly, and the others decline.
            let _ = read_both(&db, &ks, &watch, &db.snapshot(), &range);
            for snap in &snapshots {
                if let Some(got) = read_both(&db, &ks, &watch, snap, &range) {
                    prop_assert_eq!(got, fjall_range(snap, &ks, &range));
                }
            }
        }
    }

    /// A table with thousands of blocks under a partitioned index: the scan finds its blocks
    /// through index blocks a few at a time, and older versions of a key (kept for an open
    /// snapshot) continue into the next block.
    #[test]
    fn a_partitioned_index_over_many_blocks_reads_like_fjall() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).open().unwrap();
        let ks = db.keyspace("t", || options(true, true, true)).unwrap();
        for i in 0u32..3000 {
            ks.insert(i.to_be_bytes(), b"first").unwrap();
        }
        let old = db.snapshot();
        for i in (0u32..3000).step_by(2) {
            ks.insert(i.to_be_bytes(), b"second").unwrap();
        }
        for i in (0u32..3000).step_by(5) {
            ks.remove(i.to_be_bytes()).unwrap();
        }
        ks.rotate_memtable_and_wait().unwrap();
        ks.major_compact().unwrap();
        let tables: Vec<Table> = ks.tree.current_version().iter_tables().cloned().collect();
        assert!(
            tables.iter().any(|t| t.regions.index.is_some()),
            "a partitioned index"
        );
        let new = db.snapshot();
        let key = |i: u32| Bytes::copy_from_slice(&i.to_be_bytes());
        let ranges = [
            KeyRange::all(),
            KeyRange {
                lower: Bound::Included(key(1234)),
                upper: Bound::Excluded(key(2345)),
            },
            KeyRange {
                lower: Bound::Excluded(key(10)),
                upper: Bound::Included(key(11)),
            },
            KeyRange {
                lower: Bound::Included(key(2999)),
                upper: Bound::Unbounded,
            },
        ];
        let watch = VersionWatch::default();
        // The first scan sees the table set the compaction installed, after both snapshots.
        assert!(read_both(&db, &ks, &watch, &new, &KeyRange::all()).is_none());
        let new = db.snapshot();
        // Taken before the compaction: its super version still holds the versions the
        // compaction dropped, and only fjall's iterator reads them.
        assert!(read_both(&db, &ks, &watch, &old, &KeyRange::all()).is_none());
        assert_eq!(fjall_range(&old, &ks, &KeyRange::all()).len(), 3000);
        for snap in [&new] {
            for range in &ranges {
                let got =
                    read_both(&db, &ks, &watch, snap, range).expect("one table, empty memtable");
                let expected = fjall_range(snap, &ks, range);
                let first_difference = got.iter().zip(&expected).position(|(a, b)| a != b);
                assert_eq!(
                    (got.len(), first_difference),
                    (expected.len(), None),
                    "{range:?}"
                );
            }
        }
    }

    #[test]
    fn a_memtable_larger_than_a_chunk_merges_with_tables() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).open().unwrap();
        let ks = db.keyspace("t", KeyspaceCreateOptions::default).unwrap();
        for i in 0u32..2000 {
            ks.insert(i.to_be_bytes(), b"old").unwrap();
        }
        ks.rotate_memtable_and_wait().unwrap();
        for i in (0u32..2000).step_by(3) {
            ks.insert(i.to_be_bytes(), b"new").unwrap();
        }
        for i in (1u32..2000).step_by(7) {
            ks.remove(i.to_be_bytes()).unwrap();
        }
        let range = KeyRange::all();
        let watch = VersionWatch::default();
        let _ = forward_scan(&db.snapshot(), &ks, &watch, || db.visible_seqno(), &range);
        let snap = db.snapshot();
        let scan = forward_scan(&snap, &ks, &watch, || db.visible_seqno(), &range)
            .expect("one table and the memtable");
        let got: Vec<(Bytes, Bytes)> = scan.map(|r| r.unwrap()).collect();
        let expected: Vec<(Bytes, Bytes)> = snap
            .iter(&ks)
            .map(|g| {
                let (k, v) = g.into_inner().unwrap();
                (Bytes::from(k), Bytes::from(v))
            })
            .collect();
        assert_eq!(got.len(), expected.len());
        assert_eq!(got, expected);
    }
}
