//! The server in a process of its own, on 127.0.0.1:0 with the data directory given as its
//! argument (`tests-helper server DATA_DIR`); prints its address on the first line of stdout. For tests that need the
//! server's environment to differ from theirs (tests/tests/e2e/parquet.rs: the AWS variables).

pub fn main(args: &[String]) {
    let dir = args.first().expect("data directory").clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(pg_server::WORKER_STACK_BYTES)
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let db = tests::server::open_database(std::path::Path::new(&dir));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("{}", listener.local_addr().expect("address"));
        let _ = pg_server::serve(listener, db, std::future::pending()).await;
    });
}
