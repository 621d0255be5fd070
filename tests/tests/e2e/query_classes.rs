//! Query classes against an oracle: on random data, for random predicates, whatever key
//! access the planner picks (point, multi-point, row range, partition range, hash fan-out,
//! full scan) returns exactly the rows the predicate accepts, as evaluated here in Rust with
//! SQL's three-valued logic. Also EXPLAIN ANALYZE's counters.
//!
//! The seed is printed; `CLASSES_SEED=n` reruns one case.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use tests::server::TestServer;

/// A value in a test row: every column is an integer or text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum V {
    Int(i64),
    Text(String),
    Null,
}

impl V {
    fn sql(&self) -> String {
        match self {
            V::Int(i) => i.to_string(),
            V::Text(t) => format!("'{}'", t.replace('\'', "''")),
            V::Null => "NULL".into(),
        }
    }

    fn shown(&self) -> Option<String> {
        match self {
            V::Int(i) => Some(i.to_string()),
            V::Text(t) => Some(t.clone()),
            V::Null => None,
        }
    }
}

struct Table {
    name: &'static str,
    ddl: &'static str,
    /// Column names and how to draw a value for each.
    columns: Vec<(&'static str, Domain)>,
    /// The key's columns in key order, true for DESC.
    key: Vec<(usize, bool)>,
}

#[derive(Clone, Copy)]
enum Domain {
    Ints(i64, i64),
    Texts(&'static [&'static str]),
    /// Ints with NULLs.
    Nullable(i64, i64),
    /// A long constant text, so that the table spans several range partitions.
    Pad,
}

const TEXTS: &[&str] = &["", "a", "ab", "abc", "ab'c", "b", "ba", "c"];

impl Domain {
    fn draw(self, rng: &mut StdRng) -> V {
        match self {
            Domain::Ints(lo, hi) => V::Int(rng.random_range(lo..=hi)),
            Domain::Texts(t) => V::Text(t[rng.random_range(0..t.len())].to_string()),
            Domain::Pad => V::Text("x".repeat(600)),
            Domain::Nullable(lo, hi) => {
                if rng.random_bool(0.2) {
                    V::Null
                } else {
                    V::Int(rng.random_range(lo..=hi))
                }
            }
        }
    }

    /// A constant to compare with: from the domain or just outside it.
    fn constant(self, rng: &mut StdRng) -> V {
        match self {
            Domain::Ints(lo, hi) | Domain::Nullable(lo, hi) => {
                V::Int(rng.random_range(lo - 1..=hi + 1))
            }
            Domain::Texts(t) => V::Text(t[rng.random_range(0..t.len())].to_string()),
            Domain::Pad => V::Text("x".repeat(600)),
        }
    }
}

/// A predicate over one row, kept as SQL text and as something to evaluate.
#[derive(Clone, Debug)]
enum Pred {
    Cmp(usize, &'static str, V),
    In(usize, Vec<V>),
    Between(usize, V, V),
    Like(usize, String),
    /// A row-value comparison `(a, b) op (x, y)` (keyset paging).
    Row(Vec<usize>, &'static str, Vec<V>),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
}

impl Pred {
    fn sql(&self, t: &Table) -> String {
        match self {
            Pred::Cmp(c, op, v) => format!("{} {op} {}", t.columns[*c].0, v.sql()),
            Pred::In(c, vs) => format!(
                "{} IN ({})",
                t.columns[*c].0,
                vs.iter().map(V::sql).collect::<Vec<_>>().join(", ")
            ),
            Pred::Between(c, a, b) => {
                format!("{} BETWEEN {} AND {}", t.columns[*c].0, a.sql(), b.sql())
            }
            Pred::Like(c, prefix) => format!("{} LIKE '{prefix}%'", t.columns[*c].0),
            Pred::Row(cs, op, vs) => format!(
                "({}) {op} ({})",
                cs.iter()
                    .map(|&c| t.columns[c].0)
                    .collect::<Vec<_>>()
                    .join(", "),
                vs.iter().map(V::sql).collect::<Vec<_>>().join(", ")
            ),
            Pred::And(a, b) => format!("({} AND {})", a.sql(t), b.sql(t)),
            Pred::Or(a, b) => format!("({} OR {})", a.sql(t), b.sql(t)),
        }
    }

    /// SQL's three-valued answer.
    fn eval(&self, row: &[V]) -> Option<bool> {
        let cmp = |a: &V, b: &V| -> Option<std::cmp::Ordering> {
            match (a, b) {
                (V::Null, _) | (_, V::Null) => None,
                (a, b) => Some(a.cmp(b)),
            }
        };
        match self {
            Pred::Cmp(c, op, v) => {
                let o = cmp(&row[*c], v)?;
                Some(match *op {
                    "=" => o.is_eq(),
                    "<>" => o.is_ne(),
                    "<" => o.is_lt(),
                    "<=" => o.is_le(),
                    ">" => o.is_gt(),
                    ">=" => o.is_ge(),
                    _ => unreachable!(),
                })
            }
            Pred::In(c, vs) => {
                let mut any_null = false;
                for v in vs {
                    match cmp(&row[*c], v) {
                        Some(o) if o.is_eq() => return Some(true),
                        None => any_null = true,
                        _ => {}
                    }
                }
                if any_null { None } else { Some(false) }
            }
            Pred::Between(c, a, b) => {
                let lo = cmp(&row[*c], a)?;
                let hi = cmp(&row[*c], b)?;
                Some(lo.is_ge() && hi.is_le())
            }
            Pred::Row(cs, op, vs) => {
                let mut o = std::cmp::Ordering::Equal;
                for (&c, v) in cs.iter().zip(vs) {
                    o = cmp(&row[c], v)?;
                    if o.is_ne() {
                        break;
                    }
                }
                Some(match *op {
                    "<" => o.is_lt(),
                    "<=" => o.is_le(),
                    ">" => o.is_gt(),
                    _ => o.is_ge(),
                })
            }
            Pred::Like(c, prefix) => match &row[*c] {
                V::Text(t) => Some(t.starts_with(prefix.as_str())),
                _ => None,
            },
            Pred::And(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Pred::Or(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
        }
    }
}

fn atom(t: &Table, rng: &mut StdRng) -> Pred {
    // Key columns come first in every test table; favour them so that keys get bound.
    let c = if rng.random_bool(0.8) {
        rng.random_range(0..t.columns.len().min(3))
    } else {
        rng.random_range(0..t.columns.len())
    };
    let d = t.columns[c].1;
    if rng.random_bool(0.1) && t.key.len() >= 2 {
        // Two consecutive key columns.
        let start = rng.random_range(0..t.key.len() - 1);
        let cs: Vec<usize> = t.key[start..start + 2].iter().map(|k| k.0).collect();
        let vs = cs.iter().map(|&c| t.columns[c].1.constant(rng)).collect();
        let ops = ["<", "<=", ">", ">="];
        return Pred::Row(cs, ops[rng.random_range(0..4)], vs);
    }
    match rng.random_range(0..10) {
        0..=3 => Pred::Cmp(c, "=", d.constant(rng)),
        4 => Pred::In(
            c,
            (0..rng.random_range(1..4))
                .map(|_| d.constant(rng))
                .collect(),
        ),
        5 => Pred::Between(c, d.constant(rng), d.constant(rng)),
        6 if matches!(d, Domain::Texts(_)) => {
            Pred::Like(c, ["a", "ab", "b", ""][rng.random_range(0..4)].to_string())
        }
        6 => Pred::Cmp(c, "<>", d.constant(rng)),
        7 => {
            let other = d.constant(rng);
            Pred::Or(
                Box::new(Pred::Cmp(c, "=", d.constant(rng))),
                Box::new(Pred::Cmp(c, "=", other)),
            )
        }
        _ => {
            let ops = ["<", "<=", ">", ">="];
            Pred::Cmp(c, ops[rng.random_range(0..4)], d.constant(rng))
        }
    }
}

fn predicate(t: &Table, rng: &mut StdRng) -> Pred {
    let mut p = atom(t, rng);
    for _ in 0..rng.random_range(0..4) {
        let next = atom(t, rng);
        p = if rng.random_bool(0.9) {
            Pred::And(Box::new(p), Box::new(next))
        } else {
            Pred::Or(Box::new(p), Box::new(next))
        };
    }
    p
}

fn tables() -> Vec<Table> {
    vec![
        Table {
            name: "ordered",
            ddl: "CREATE TABLE ordered (p int, q text, r int, s bigint, v int, pad text, \
                  PRIMARY KEY ((p, q), r DESC, s))",
            columns: vec![
                ("p", Domain::Ints(0, 4)),
                ("q", Domain::Texts(TEXTS)),
                ("r", Domain::Ints(-3, 3)),
                ("s", Domain::Ints(0, 4)),
                ("v", Domain::Nullable(0, 9)),
                ("pad", Domain::Pad),
            ],
            key: vec![(0, false), (1, false), (2, true), (3, false)],
        },
        Table {
            name: "spread",
            ddl: "CREATE TABLE spread (p int, r text, v int, PRIMARY KEY ((p) HASH, r)); \
                  CREATE INDEX spread_v ON spread (v)",
            columns: vec![
                ("p", Domain::Ints(0, 9)),
                ("r", Domain::Texts(TEXTS)),
                ("v", Domain::Nullable(0, 9)),
            ],
            key: vec![(0, false), (1, false)],
        },
        Table {
            name: "named",
            ddl: "CREATE TABLE named (k text PRIMARY KEY, v int, w int); \
                  CREATE INDEX named_w ON named (w) INCLUDE (v)",
            columns: vec![
                ("k", Domain::Texts(TEXTS)),
                ("v", Domain::Nullable(0, 9)),
                ("w", Domain::Ints(0, 3)),
            ],
            key: vec![(0, false)],
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_class_returns_what_the_predicate_accepts() {
    let seed: u64 = std::env::var("CLASSES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("CLASSES_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let server = TestServer::start();
    let client = server.connect().await;
    let mut classes_seen = BTreeSet::new();
    // Queries answered through an index (spread_v, named_w): same rows as the predicate.
    let mut index_reads = 0;
    for t in tables() {
        client.batch_execute(t.ddl).await.unwrap();
        let mut rows: Vec<Vec<V>> = Vec::new();
        for _ in 0..300 {
            let row: Vec<V> = t.columns.iter().map(|(_, d)| d.draw(&mut rng)).collect();
            let values = row.iter().map(V::sql).collect::<Vec<_>>().join(", ");
            let inserted = client
                .execute(
                    &format!(
                        "INSERT INTO {} VALUES ({values}) ON CONFLICT DO NOTHING",
                        t.name
                    ),
                    &[],
                )
                .await
                .unwrap();
            if inserted == 1 {
                rows.push(row);
            }
        }
        let columns: Vec<&str> = t.columns.iter().map(|c| c.0).collect();
        for _ in 0..150 {
            let pred = predicate(&t, &mut rng);
            let where_clause = pred.sql(&t);
            // Sometimes in key order (or its reverse) with a LIMIT: no sort, the scan does it.
            let ordered = rng.random_bool(0.3).then(|| rng.random_bool(0.5));
            let limit = rng.random_range(0..6);
            let tail = match ordered {
                None => String::new(),
                Some(reverse) => {
                    let keys: Vec<String> = t
                        .key
                        .iter()
                        .map(|&(c, desc)| {
                            let dir = if desc != reverse { "DESC" } else { "ASC" };
                            format!("{} {dir}", t.columns[c].0)
                        })
                        .collect();
                    format!(" ORDER BY {} LIMIT {limit}", keys.join(", "))
                }
            };
            let sql = format!(
                "SELECT {} FROM {} WHERE {where_clause}{tail}",
                columns.join(", "),
                t.name
            );
            let got: Vec<Vec<Option<String>>> = client
                .simple_query(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e} (CLASSES_SEED={seed})"))
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                        (0..columns.len())
                            .map(|i| r.get(i).map(str::to_string))
                            .collect(),
                    ),
                    _ => None,
                })
                .collect();
            let mut got = got;
            let mut accepted: Vec<&Vec<V>> =
                rows.iter().filter(|r| pred.eval(r) == Some(true)).collect();
            match ordered {
                None => got.sort(),
                Some(reverse) => {
                    accepted.sort_by(|a, b| {
                        t.key
                            .iter()
                            .map(|&(c, desc)| {
                                let o = a[c].cmp(&b[c]);
                                if desc != reverse { o.reverse() } else { o }
                            })
                            .find(|o| o.is_ne())
                            .unwrap_or(std::cmp::Ordering::Equal)
                    });
                    accepted.truncate(limit);
                }
            }
            let mut want: Vec<Vec<Option<String>>> = accepted
                .iter()
                .map(|r| r.iter().map(V::shown).collect())
                .collect();
            if ordered.is_none() {
                want.sort();
            }
            let plan = explain(&client, &format!("EXPLAIN {sql}")).await;
            assert_eq!(
                got,
                want,
                "{sql}\nplan:\n{}\n(CLASSES_SEED={seed})",
                plan.join("\n")
            );
            // DataFusion drops the scan of a predicate it folds to false.
            if plan.iter().any(|l| l.contains(" on index ")) {
                index_reads += 1;
            }
            if let Some(access) = plan
                .iter()
                .find(|l| l.contains(" on ") && !l.contains("Point lookups on "))
            {
                let class = access.trim().trim_start_matches("->").trim();
                let class = class.split(" on ").next().unwrap();
                let class = class.split(" (").next().unwrap().to_string();
                classes_seen.insert(class);
            }
        }
    }
    let expected: BTreeSet<String> = [
        "Point",
        "Multi-point",
        "Row range scan",
        "Partition range scan",
        "Full table scan",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(classes_seen, expected, "CLASSES_SEED={seed}");
    assert!(
        index_reads > 10,
        "{index_reads} index reads (CLASSES_SEED={seed})"
    );
    // The ordered table spans several range partitions: its full scans are split (and the
    // random queries above ran over that split).
    let plan = explain(&client, "EXPLAIN SELECT * FROM ordered").await;
    assert!(
        plan.iter().any(|l| l.contains("Parallel: ")),
        "no split: {plan:?} (CLASSES_SEED={seed})"
    );
}

async fn explain(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_analyze_counts_what_the_scan_did() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE reg (tenant int, id bigint, name text, PRIMARY KEY ((tenant), id));
             INSERT INTO reg SELECT g % 10, g, 'n' || g FROM generate_series(1, 2000) g",
        )
        .await
        .unwrap();
    let plan = explain(
        &client,
        "EXPLAIN ANALYZE SELECT count(*) FROM reg WHERE tenant = 3 AND name LIKE 'n1%'",
    )
    .await;
    let text = plan.join("\n");
    assert!(
        text.contains("Row range scan on reg (actual rows=111 "),
        "{text}"
    );
    assert!(
        text.contains("Rows scanned: 200, rows returned: 111, range partitions visited: 1"),
        "{text}"
    );
    assert!(
        plan.last().unwrap().starts_with("Execution Time: "),
        "{text}"
    );
}
