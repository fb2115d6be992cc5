// Neo4j in a container for chatmem's testcontainers route: the interface of the official
// neo4j image as testcontainers' Neo4jContainer uses it. Bolt on 0.0.0.0:7687, HTTP off,
// NEO4J_AUTH ("neo4j/<password>" or "none") honoured, usage reporting off. Prints
// "Remote interface available at bolt://..." once Bolt accepts the credentials, then runs
// until SIGTERM.
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

public final class ContainerLauncher {
    public static void main(String[] args) throws Exception {
        Path workdir = Path.of(args.length > 0 ? args[0] : "/data").toAbsolutePath();
        String auth = System.getenv().getOrDefault("NEO4J_AUTH", "neo4j/neo4j");
        boolean authEnabled = !auth.equals("none");
        String password = authEnabled ? auth.substring(auth.indexOf('/') + 1) : null;
        if (authEnabled && !auth.startsWith("neo4j/")) {
            System.err.println("NEO4J_AUTH must be neo4j/<password> or none");
            System.exit(2);
        }
        Neo4j neo4j = Neo4jBuilders.newInProcessBuilder(workdir)
                .withDisabledServer()
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress("0.0.0.0", 7687))
                .withConfig(GraphDatabaseSettings.auth_enabled, authEnabled)
                .withConfig(GraphDatabaseSettings.udc_enabled, false)
                .withConfig(GraphDatabaseSettings.shutdown_transaction_end_timeout, Duration.ofSeconds(1))
                .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(200))
                .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(200))
                .build();
        if (authEnabled) {
            neo4j.databaseManagementService().database("system").executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                neo4j.close();
            } finally {
                stopped.countDown();
            }
        }, "chatmem-neo4j-shutdown"));
        System.out.println("Bolt enabled on 0.0.0.0:7687.");
        System.out.println("Remote interface available at bolt://0.0.0.0:7687/");
        System.out.flush();
        stopped.await();
    }
}
