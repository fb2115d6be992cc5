// An in-process Neo4j for chatmem's tests: Bolt only, on 127.0.0.1, auth and usage reporting off.
//
// Usage: java -cp "<neo4j-harness classpath>/*" Launcher.java <workdir> [port]
// Prints "bolt://127.0.0.1:<port>" on stdout once the server accepts Bolt, then runs until
// SIGTERM (a shutdown hook closes the database cleanly). Port 0 (the default) lets the OS pick
// a free port, so there is no race with other processes looking for one.
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

public final class Launcher {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher <workdir> [port]");
            System.exit(2);
        }
        Path workdir = Path.of(args[0]).toAbsolutePath();
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        Neo4j neo4j = Neo4jBuilders.newInProcessBuilder(workdir)
                .withDisabledServer()  // no HTTP/HTTPS connector, no web server
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .withConfig(GraphDatabaseSettings.auth_enabled, false)
                .withConfig(GraphDatabaseSettings.udc_enabled, false)
                // A test server: stop in about a second instead of Bolt's graceful 10 s.
                .withConfig(GraphDatabaseSettings.shutdown_transaction_end_timeout, Duration.ofSeconds(1))
                .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(200))
                .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(200))
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                neo4j.close();
            } finally {
                stopped.countDown();
            }
        }, "chatmem-neo4j-shutdown"));
        URI bolt = neo4j.boltURI();
        System.out.println("bolt://127.0.0.1:" + bolt.getPort());
        System.out.flush();
        stopped.await();  // only the SIGTERM/SIGINT shutdown hook releases this
    }
}
