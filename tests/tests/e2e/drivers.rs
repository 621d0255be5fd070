//! Real client programs against the real server: psycopg 3, asyncpg, SQLAlchemy 2 Core,
//! Django 5 (its migrations and ORM), node-postgres, Knex, Sequelize, TypeORM, postgres.js,
//! Drizzle (drizzle-kit push and drizzle-orm) and pgjdbc
//! (tests/drivers). Each prints "<driver> ok" when all its checks
//! pass. The drivers must be installed: `.ci/run` installs them (pip, npm, apt-get).

use std::path::{Path, PathBuf};
use std::process::Command;
use tests::server::TestServer;

fn drivers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers")
}

/// Runs a client program with the server's host and port as its last two arguments.
fn run(server: &TestServer, program: &str, args: &[&str], dir: &Path) {
    let out = Command::new(program)
        .args(args)
        .arg(server.addr.ip().to_string())
        .arg(server.addr.port().to_string())
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e} (.ci/run installs the drivers)"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" ok"),
        "{program} {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn psycopg() {
    let server = TestServer::start();
    run(&server, "python3", &["psycopg_test.py"], &drivers_dir());
}

#[test]
fn asyncpg() {
    let server = TestServer::start();
    run(&server, "python3", &["asyncpg_test.py"], &drivers_dir());
}

#[test]
fn sqlalchemy() {
    let server = TestServer::start();
    run(&server, "python3", &["sqlalchemy_test.py"], &drivers_dir());
}

#[test]
fn django() {
    let server = TestServer::start();
    run(
        &server,
        "python3",
        &["django_test.py"],
        &drivers_dir().join("django"),
    );
}

/// Runs a node program of tests/drivers/node (its packages installed) against a fresh server.
fn run_node(program: &str) {
    let dir = drivers_dir().join("node");
    assert!(
        dir.join("node_modules/typeorm").exists() && dir.join("node_modules/drizzle-kit").exists(),
        "run `npm ci` in {} (.ci/run does)",
        dir.display()
    );
    let server = TestServer::start();
    run(&server, "node", &[program], &dir);
}

#[test]
fn node_postgres() {
    run_node("pg_test.js");
}

#[test]
fn knex() {
    run_node("knex_test.js");
}

#[test]
fn sequelize() {
    run_node("sequelize_test.js");
}

#[test]
fn typeorm() {
    run_node("typeorm_test.js");
}

/// postgres.js, drizzle-kit's push (twice: the second must find the schema it pushed) and
/// drizzle-orm.
#[test]
fn drizzle() {
    run_node("drizzle_test.js");
}

#[test]
fn pgjdbc() {
    let jar = "/usr/share/java/postgresql.jar";
    assert!(
        Path::new(jar).exists(),
        "{jar} is missing: apt-get install libpostgresql-jdbc-java (.ci/run does)"
    );
    let dir = drivers_dir().join("java");
    let build = tempfile::tempdir().unwrap();
    let javac = Command::new("javac")
        .args([
            "-cp",
            jar,
            "-d",
            &build.path().display().to_string(),
            "JdbcTest.java",
        ])
        .current_dir(&dir)
        .output()
        .expect("javac (a JDK) must be installed");
    assert!(
        javac.status.success(),
        "{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let classpath = format!("{}:{jar}", build.path().display());
    let server = TestServer::start();
    run(&server, "java", &["-cp", &classpath, "JdbcTest"], &dir);
}
