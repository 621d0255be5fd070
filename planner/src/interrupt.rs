//! Stopping a running statement for real when the client cancels it.
//!
//! Dropping a DataFusion stream stops most plans at their next batch, but an operator can
//! work for a long time inside one poll: a nested-loop join with a filter that rejects every
//! pair evaluates the filter once per build-side row without returning. A cancel request sets
//! the session's [`Interrupt`] from another task, and every place that can loop long checks
//! it: the filters of nested-loop joins (wrapped by [`InterruptibleJoins`]), our scans and the
//! per-row subquery evaluator; and the task that drives a plan (`executor`) looks at it every
//! few milliseconds and drops the plan, which stops work that reads no table.
//! `statement_timeout` stops a statement the same way, with its own message.

use crate::error::Error;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::joins::NestedLoopJoinExec;
use datafusion::physical_plan::joins::utils::JoinFilter;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// The cancel flag of one session; cloned handles share it. It holds why the statement
/// must stop: [`RUNNING`], [`CANCELED`] or [`TIMED_OUT`].
#[derive(Clone, Default, Debug)]
pub struct Interrupt(Arc<AtomicU8>);

const RUNNING: u8 = 0;
const CANCELED: u8 = 1;
const TIMED_OUT: u8 = 2;

impl Interrupt {
    /// Asks the running statement to stop (a cancel request).
    pub fn trigger(&self) {
        self.0.store(CANCELED, Ordering::Relaxed);
    }

    /// Stops the running statement because it ran past `statement_timeout`.
    pub fn trigger_timeout(&self) {
        let _ = self
            .0
            .compare_exchange(RUNNING, TIMED_OUT, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Clears the flag as a statement starts.
    pub fn reset(&self) {
        self.0.store(RUNNING, Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed) != RUNNING
    }

    /// `Err(57014)` once the statement has been asked to stop.
    pub fn check(&self) -> DfResult<()> {
        match self.0.load(Ordering::Relaxed) {
            RUNNING => Ok(()),
            TIMED_OUT => Err(DataFusionError::External(Box::new(Error::StatementTimeout))),
            _ => Err(DataFusionError::External(Box::new(Error::Canceled))),
        }
    }
}

/// Wraps the filter of every nested-loop join so that it checks the session's interrupt.
#[derive(Debug)]
pub struct InterruptibleJoins(pub Interrupt);

impl PhysicalOptimizerRule for InterruptibleJoins {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<NestedLoopJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(filter) = join.filter() else {
                return Ok(Transformed::no(node));
            };
            if filter.expression().is::<Checked>() {
                return Ok(Transformed::no(node));
            }
            let checked = JoinFilter::new(
                Arc::new(Checked {
                    inner: Arc::clone(filter.expression()),
                    interrupt: self.0.clone(),
                }),
                filter.column_indices().to_vec(),
                Arc::clone(filter.schema()),
            );
            let projection = join.projection().as_ref().map(|p| p.to_vec());
            let rebuilt = NestedLoopJoinExec::try_new(
                Arc::clone(join.left()),
                Arc::clone(join.right()),
                Some(checked),
                join.join_type(),
                projection,
            )?;
            Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "partita_interruptible_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// An expression that checks the interrupt before evaluating its inner expression.
#[derive(Debug)]
struct Checked {
    inner: Arc<dyn PhysicalExpr>,
    interrupt: Interrupt,
}

impl PartialEq for Checked {
    fn eq(&self, other: &Self) -> bool {
        self.inner.as_ref() == other.inner.as_ref()
    }
}

impl Eq for Checked {}

impl Hash for Checked {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inner.hash(state);
    }
}

impl fmt::Display for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl PhysicalExpr for Checked {
    fn data_type(&self, input_schema: &Schema) -> DfResult<DataType> {
        self.inner.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> DfResult<bool> {
        self.inner.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> DfResult<ColumnarValue> {
        self.interrupt.check()?;
        self.inner.evaluate(batch)
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.inner]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> DfResult<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Checked {
            inner: children.remove(0),
            interrupt: self.interrupt.clone(),
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt_sql(f)
    }
}
