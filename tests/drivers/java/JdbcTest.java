// pgjdbc (Debian's libpostgresql-jdbc-java) against Partita: prepared statements past the
// switch to named server statements (prepareThreshold), batches, transactions, errors and
// DatabaseMetaData. Run by tests/tests/e2e/drivers.rs with the server's address.
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;

public class JdbcTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/partita?user=partita";
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS late_fees");
                s.execute("DROP TABLE IF EXISTS rentals");
                s.execute("CREATE TABLE rentals (store int, movie text, copy_no int, renter varchar(30), "
                        + "fee numeric(5,2) NOT NULL DEFAULT 3.50, due date, PRIMARY KEY ((store), movie, copy_no))");
                s.execute("CREATE INDEX rentals_by_renter ON rentals (renter)");
            }

            // Batches of a prepared INSERT.
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO rentals (store, movie, copy_no, renter, fee, due) VALUES (?, ?, ?, ?, ?, ?)")) {
                for (int i = 1; i <= 30; i++) {
                    ps.setInt(1, 1);
                    ps.setString(2, "Movie " + (i % 3));
                    ps.setInt(3, i);
                    ps.setString(4, i % 4 == 0 ? null : "renter" + i);
                    ps.setBigDecimal(5, new BigDecimal("2.25").add(BigDecimal.valueOf(i)));
                    ps.setDate(6, java.sql.Date.valueOf("2024-03-" + String.format("%02d", 1 + i % 28)));
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                check(counts.length == 30 && Arrays.stream(counts).allMatch(n -> n == 1), "batch counts");
            }

            // The same prepared query ten times: from the fifth on pgjdbc uses a named server
            // statement and binary results.
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT movie, renter, fee, due FROM rentals WHERE store = ? AND movie = ? AND copy_no = ?")) {
                for (int i = 1; i <= 10; i++) {
                    ps.setInt(1, 1);
                    ps.setString(2, "Movie " + (i % 3));
                    ps.setInt(3, i);
                    try (ResultSet rs = ps.executeQuery()) {
                        check(rs.next(), "row " + i);
                        check(rs.getString(1).equals("Movie " + (i % 3)), "movie " + i);
                        check(rs.getBigDecimal(3).compareTo(new BigDecimal("2.25").add(BigDecimal.valueOf(i))) == 0,
                                "fee " + i + ": " + rs.getBigDecimal(3));
                        check(rs.getDate(4).toString().equals("2024-03-" + String.format("%02d", 1 + i % 28)), "due " + i);
                        check((rs.getString(2) == null) == (i % 4 == 0), "renter " + i);
                        check(!rs.next(), "one row " + i);
                    }
                }
            }

            // A transaction rolled back, and an error that leaves the connection usable.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("DELETE FROM rentals WHERE store = 1");
            }
            c.rollback();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM rentals")) {
                rs.next();
                check(rs.getLong(1) == 30, "rolled back");
            }
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO rentals (store, movie, copy_no) VALUES (1, 'Movie 1', 1)");
                throw new AssertionError("duplicate accepted");
            } catch (SQLException e) {
                check("23505".equals(e.getSQLState()), "23505, got " + e.getSQLState());
            }

            // Metadata.
            DatabaseMetaData md = c.getMetaData();
            check(md.getDatabaseProductName().equals("PostgreSQL"), md.getDatabaseProductName());
            try (ResultSet rs = md.getTables(null, "public", "rentals", new String[] {"TABLE"})) {
                check(rs.next() && rs.getString("TABLE_NAME").equals("rentals"), "getTables");
            }
            List<String> columns = new ArrayList<>();
            try (ResultSet rs = md.getColumns(null, "public", "rentals", null)) {
                while (rs.next()) {
                    columns.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME") + ":"
                            + rs.getInt("NULLABLE") + ":" + rs.getString("COLUMN_DEF"));
                }
            }
            check(columns.equals(List.of("store:int4:0:null", "movie:text:0:null", "copy_no:int4:0:null",
                    "renter:varchar:1:null", "fee:numeric:0:3.50", "due:date:1:null")), "getColumns " + columns);
            List<String> pk = new ArrayList<>();
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "rentals")) {
                while (rs.next()) pk.add(rs.getShort("KEY_SEQ") + ":" + rs.getString("COLUMN_NAME"));
            }
            check(pk.equals(List.of("1:store", "2:movie", "3:copy_no")), "getPrimaryKeys " + pk);
            Set<String> indexes = new TreeSet<>();
            try (ResultSet rs = md.getIndexInfo(null, "public", "rentals", false, false)) {
                while (rs.next()) {
                    indexes.add(rs.getString("INDEX_NAME") + ":" + rs.getBoolean("NON_UNIQUE") + ":"
                            + rs.getShort("ORDINAL_POSITION") + ":" + rs.getString("COLUMN_NAME"));
                }
            }
            check(indexes.contains("rentals_by_renter:true:1:renter"), "getIndexInfo " + indexes);
            check(indexes.contains("rentals_pkey:false:1:store"), "getIndexInfo " + indexes);

            // Foreign keys, from either side.
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS late_fees");
                s.execute("CREATE TABLE late_fees (id int PRIMARY KEY, store int, movie text, copy_no int, "
                        + "FOREIGN KEY (store, movie, copy_no) REFERENCES rentals ON DELETE CASCADE)");
            }
            List<String> imported = new ArrayList<>();
            try (ResultSet rs = md.getImportedKeys(null, "public", "late_fees")) {
                while (rs.next()) {
                    imported.add(rs.getString("PKTABLE_NAME") + "." + rs.getString("PKCOLUMN_NAME") + "<-"
                            + rs.getString("FKCOLUMN_NAME") + ":" + rs.getShort("KEY_SEQ") + ":"
                            + rs.getShort("DELETE_RULE") + ":" + rs.getString("FK_NAME"));
                }
            }
            check(imported.equals(List.of(
                    "rentals.store<-store:1:0:late_fees_store_movie_copy_no_fkey",
                    "rentals.movie<-movie:2:0:late_fees_store_movie_copy_no_fkey",
                    "rentals.copy_no<-copy_no:3:0:late_fees_store_movie_copy_no_fkey")), "getImportedKeys " + imported);
            List<String> exported = new ArrayList<>();
            try (ResultSet rs = md.getExportedKeys(null, "public", "rentals")) {
                while (rs.next()) exported.add(rs.getString("FKTABLE_NAME") + "." + rs.getString("FKCOLUMN_NAME"));
            }
            check(exported.equals(List.of("late_fees.store", "late_fees.movie", "late_fees.copy_no")),
                    "getExportedKeys " + exported);
        }
        // LISTEN/NOTIFY: getNotifications waits for what another connection sent.
        try (Connection listener = DriverManager.getConnection(url);
             Connection sender = DriverManager.getConnection(url)) {
            try (Statement s = listener.createStatement()) {
                s.execute("LISTEN jobs");
            }
            try (PreparedStatement ps = sender.prepareStatement("SELECT pg_notify('jobs', ?)")) {
                ps.setString(1, "job 1");
                ps.execute();
            }
            org.postgresql.PGNotification[] got =
                    listener.unwrap(org.postgresql.PGConnection.class).getNotifications(10000);
            int senderPid = sender.unwrap(org.postgresql.PGConnection.class).getBackendPID();
            check(got != null && got.length == 1 && got[0].getName().equals("jobs")
                    && got[0].getParameter().equals("job 1") && got[0].getPID() == senderPid,
                    "notification " + Arrays.toString(got));
        }
        System.out.println("pgjdbc ok");
    }
}
