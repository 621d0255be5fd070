//! Model test: random transactions (puts, deletes, commits, rollbacks), scans and reopens,
//! checked against a `BTreeMap` holding what should be committed; range partition counts and
//! boundaries are checked against the same model.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use storage::{
    Direction, KeyColumn, KeyLayout, KeyRange, KeyspaceKind, ScalarType, Store, StoreOptions, Value,
};

#[derive(Debug, Clone)]
enum Op {
    Txn {
        writes: Vec<(u16, Option<u8>)>,
        commit: bool,
        scan_inside: Option<(u16, u16)>,
    },
    Scan {
        lo: u16,
        hi: u16,
        lo_incl: bool,
        hi_incl: bool,
        reverse: bool,
    },
    Reopen,
}

fn layout() -> KeyLayout {
    KeyLayout::new(
        vec![KeyColumn::asc(ScalarType::Int4)],
        vec![KeyColumn::desc(ScalarType::Int2)],
        0,
    )
    .unwrap()
}

/// Key k lives in partition k / 8 with row key k % 8 (DESC).
fn key(k: u16) -> Vec<u8> {
    layout()
        .encode(
            &[Value::Int4(i32::from(k / 8))],
            &[Value::Int2((k % 8) as i16)],
        )
        .unwrap()
}

fn value(v: u8, k: u16) -> Vec<u8> {
    vec![v; 1 + (k as usize % 7) * 5]
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec((0u16..64, prop::option::weighted(0.8, any::<u8>())), 1..12), prop::bool::weighted(0.8), prop::option::of((0u16..64, 0u16..64)))
            .prop_map(|(writes, commit, scan_inside)| Op::Txn { writes, commit, scan_inside }),
        3 => (0u16..64, 0u16..64, any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(lo, hi, lo_incl, hi_incl, reverse)| Op::Scan { lo, hi, lo_incl, hi_incl, reverse }),
        1 => Just(Op::Reopen),
    ]
}

fn bound(k: u16, incl: bool) -> Bound<bytes::Bytes> {
    let b = bytes::Bytes::from(key(k));
    if incl {
        Bound::Included(b)
    } else {
        Bound::Excluded(b)
    }
}

fn model_scan(
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    range: &KeyRange,
    reverse: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rows: Vec<_> = model
        .iter()
        .filter(|(k, _)| range.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if reverse {
        rows.reverse();
    }
    rows
}

fn collect(iter: impl Iterator<Item = storage::Result<storage::Row>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    iter.map(|r| r.map(|row| (row.key.to_vec(), row.value.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn check_ranges(store: &Store, ks: storage::KeyspaceId, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let parts = store.range_partitions(ks);
    let total_rows: i64 = parts.iter().map(|p| p.rows).sum();
    assert_eq!(total_rows, model.len() as i64, "range partition row counts");
    for (i, part) in parts.iter().enumerate() {
        let in_part = model
            .keys()
            .filter(|k| part.key_range().contains(k))
            .count();
        assert_eq!(part.rows, in_part as i64, "rows of range partition {i}");
        if i > 0 {
            // Boundaries are partition prefixes: a whole partition-key encoding and no more.
            assert_eq!(
                layout().partition_prefix_len(&part.start).ok(),
                Some(part.start.len())
            );
            assert_eq!(Some(&part.start), parts[i - 1].end.as_ref());
        }
    }
    assert!(parts.last().unwrap().end.is_none());
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        split_bytes_max: 400,
        cache_bytes: 4 << 20,
    };
    let mut store = Store::open(dir.path(), options.clone()).unwrap();
    let ks = {
        let mut txn = store.begin();
        let ks = txn
            .create_keyspace(KeyspaceKind::Table, "t", layout())
            .unwrap();
        txn.commit().unwrap();
        ks
    };
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Txn {
                writes,
                commit,
                scan_inside,
            } => {
                let mut txn = store.begin();
                let mut pending = model.clone();
                for (k, v) in writes {
                    match v {
                        Some(v) => {
                            txn.put(ks, &key(k), value(v, k)).unwrap();
                            pending.insert(key(k), value(v, k));
                        }
                        None => {
                            txn.delete(ks, &key(k)).unwrap();
                            pending.remove(&key(k));
                        }
                    }
                }
                if let Some((lo, hi)) = scan_inside {
                    let range = KeyRange {
                        lower: bound(lo, true),
                        upper: bound(hi, true),
                    };
                    for reverse in [false, true] {
                        let dir = if reverse {
                            Direction::Reverse
                        } else {
                            Direction::Forward
                        };
                        assert_eq!(
                            collect(txn.scan(ks, &range, dir).unwrap()),
                            model_scan(&pending, &range, reverse)
                        );
                    }
                    let probe = key(lo);
                    assert_eq!(
                        txn.get(ks, &probe).unwrap().map(|r| r.value.to_vec()),
                        pending.get(&probe).cloned()
                    );
                }
                if commit {
                    txn.commit().unwrap();
                    model = pending;
                } else {
                    txn.rollback();
                }
            }
            Op::Scan {
                lo,
                hi,
                lo_incl,
                hi_incl,
                reverse,
            } => {
                let range = KeyRange {
                    lower: bound(lo, lo_incl),
                    upper: bound(hi, hi_incl),
                };
                let dir = if reverse {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                assert_eq!(
                    collect(store.snapshot().scan(ks, &range, dir).unwrap()),
                    model_scan(&model, &range, reverse)
                );
            }
            Op::Reopen => {
                drop(store);
                store = Store::open(dir.path(), options.clone()).unwrap();
            }
        }
        check_ranges(&store, ks, &model);
    }
    let all = collect(
        store
            .snapshot()
            .scan(ks, &KeyRange::all(), Direction::Forward)
            .unwrap(),
    );
    assert_eq!(all, model_scan(&model, &KeyRange::all(), false));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn store_matches_btreemap_model(ops in prop::collection::vec(arb_op(), 1..60)) {
        run(ops);
    }
}

#[test]
fn splits_happen_and_never_inside_a_partition() {
    let mut ops = Vec::new();
    for k in 0..64u16 {
        ops.push(Op::Txn {
            writes: vec![(k, Some(k as u8))],
            commit: true,
            scan_inside: None,
        });
    }
    ops.push(Op::Reopen);
    run(ops.clone());

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        StoreOptions {
            split_bytes_max: 400,
            cache_bytes: 4 << 20,
        },
    )
    .unwrap();
    let mut txn = store.begin();
    let ks = txn
        .create_keyspace(KeyspaceKind::Table, "t", layout())
        .unwrap();
    txn.commit().unwrap();
    for k in 0..64u16 {
        let mut txn = store.begin();
        txn.put(ks, &key(k), value(1, k)).unwrap();
        txn.commit().unwrap();
    }
    let parts = store.range_partitions(ks);
    assert!(parts.len() > 2, "expected splits, got {parts:?}");
    for part in &parts[1..] {
        assert_eq!(
            layout().partition_prefix_len(&part.start).ok(),
            Some(part.start.len())
        );
    }
}
