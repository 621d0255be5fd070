//! Query execution on a runtime of its own.
//!
//! DataFusion operators can keep a thread busy for a long time inside one poll. If they ran on
//! the server's runtime, a few heavy queries would occupy every worker, and connections —
//! including the one carrying a CancelRequest — would wait for them. So plans run on the
//! `Executor`'s runtime, and their batches come back to the connection through a small
//! channel; the connection's own runtime only does protocol work.

use datafusion::arrow::array::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::StreamExt;
use std::sync::Arc;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use crate::interrupt::Interrupt;

/// How often a running plan's task looks at the session's interrupt.
const INTERRUPT_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The runtime that runs query plans, shared by every session of a database.
pub struct Executor {
    runtime: Option<Runtime>,
}

impl Executor {
    pub fn new() -> std::io::Result<Executor> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("partita-query")
            // Deep plans recurse when executed; unoptimized builds keep large frames.
            .thread_stack_size(16 << 20)
            .enable_all()
            .build()?;
        Ok(Executor {
            runtime: Some(runtime),
        })
    }

    fn runtime(&self) -> &Runtime {
        self.runtime.as_ref().expect("runtime lives until drop")
    }

    /// Plans `df` (here, so planning errors are the statement's own) and runs the plan on the
    /// query runtime; its batches stream back as they are produced. Dropping the returned
    /// stream stops the work at the plan's next yield point.
    pub async fn stream(
        &self,
        df: DataFrame,
        interrupt: &Interrupt,
    ) -> DfResult<SendableRecordBatchStream> {
        let task_ctx = Arc::new(df.task_ctx());
        let plan = df.create_physical_plan().await?;
        Ok(self.stream_plan(plan, task_ctx, interrupt.clone()))
    }

    /// Runs a physical plan on the query runtime, its batches streamed back.
    pub fn stream_plan(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        task_ctx: Arc<TaskContext>,
        interrupt: Interrupt,
    ) -> SendableRecordBatchStream {
        let schema = plan.schema();
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        let panic_tx = tx.clone();
        let work = async move {
            let mut stream = match datafusion::physical_plan::execute_stream(plan, task_ctx) {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            // A plan that works long inside operators that do not check the interrupt (a
            // table-less computation) is stopped here: the stream is dropped, which stops
            // DataFusion's tasks, as soon as the interrupt is seen between its yields.
            let mut watch = tokio::time::interval(INTERRUPT_POLL);
            loop {
                tokio::select! {
                    _ = tx.closed() => return,
                    _ = watch.tick() => {
                        if let Err(e) = interrupt.check() {
                            let _ = tx.send(Err(e)).await;
                            return;
                        }
                    }
                    next = stream.next() => match next {
                        Some(batch) => {
                            if tx.send(batch).await.is_err() {
                                return;
                            }
                        }
                        None => return,
                    },
                }
            }
        };
        let task = self.runtime().spawn(async move {
            use futures::FutureExt;
            // A panic must not look like the end of the result.
            if let Err(panic) = std::panic::AssertUnwindSafe(work).catch_unwind().await {
                let what = panic_message(panic.as_ref());
                let error = DataFusionError::Execution(format!("query panicked: {what}"));
                let _ = panic_tx.send(Err(error)).await;
            }
        });
        let guard = AbortOnDrop(task);
        let batches = futures::stream::unfold((rx, guard), |(mut rx, guard)| async move {
            let batch = rx.recv().await?;
            Some((batch, (rx, guard)))
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
    }

    /// Runs a future on the query runtime (a plan executed directly, say).
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> DfResult<T> {
        let mut task = AbortOnDrop(self.runtime().spawn(work));
        match (&mut task.0).await {
            Ok(value) => Ok(value),
            Err(e) if e.is_panic() => Err(DataFusionError::Execution(format!(
                "query panicked: {}",
                panic_message(e.into_panic().as_ref())
            ))),
            Err(e) => Err(DataFusionError::Execution(format!(
                "query task failed: {e}"
            ))),
        }
    }

    /// Runs `df` on the query runtime and collects every batch.
    pub async fn collect(
        &self,
        df: DataFrame,
        interrupt: &Interrupt,
    ) -> DfResult<Vec<RecordBatch>> {
        let mut stream = self.stream(df, interrupt).await?;
        let mut batches = Vec::new();
        while let Some(batch) = stream.next().await {
            batches.push(batch?);
        }
        Ok(batches)
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which is not allowed inside another runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The text of a panic payload.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}
