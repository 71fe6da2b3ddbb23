import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Starts Neo4j Community in this JVM with only the Bolt connector, on loopback,
 * auth off. Compiled by `kip2cypher neo4j start` (with ecj, per Neo4j version) and run as:
 * java -cp CLASSES:CLASSPATH Launcher HOME PORT PAGECACHE_MB TX_TIMEOUT_S
 * It writes HOME/launcher.ready once Bolt listens and shuts the database down cleanly on SIGTERM.
 */
public class Launcher {
    public static void main(String[] args) throws Exception {
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = Integer.parseInt(args[1]);
        long pageCacheMb = Long.parseLong(args[2]);
        long txTimeoutS = Long.parseLong(args[3]);
        Files.createDirectories(home);
        Path ready = home.resolve("launcher.ready");
        Files.deleteIfExists(ready);

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMb))
                .setConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofSeconds(txTimeoutS))
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                Files.deleteIfExists(ready);
            } catch (Exception ignored) {
                // the pid file and ready marker are advisory only
            }
            dbms.shutdown();
        }, "kip2cypher-neo4j-shutdown"));
        dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        Files.writeString(ready, "bolt://127.0.0.1:" + port + "\n");
        System.out.println("kip2cypher neo4j launcher: bolt://127.0.0.1:" + port + " ready");
        Thread.currentThread().join();
    }
}
