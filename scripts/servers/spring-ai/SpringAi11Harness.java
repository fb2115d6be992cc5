// Drives Spring AI 1.1's own Cassandra, Neo4j and MongoDB chat memory repositories (and its
// MessageWindowChatMemory) against the server chatmem's tests use, so chatmem's Spring AI
// layouts there are checked against Spring itself. Spring AI 1.1 (Jackson 2): those
// repositories were not on Maven Central at 2.0. Compiled once by scripts/install/spring-ai.sh.
//
// Usage: java -cp "lib/*:classes" SpringAi11Harness cassandra HOST:PORT DATACENTER KEYSPACE COMMAND
//        java -cp "lib/*:classes" SpringAi11Harness neo4j BOLT_URI COMMAND
//        java -cp "lib/*:classes" SpringAi11Harness mongo MONGODB_URI DATABASE COMMAND
//   (building the repository with Spring's defaults creates its schema: Cassandra's keyspace,
//   type and table, Neo4j's two indexes; MongoDB's repository creates nothing: Spring Boot's
//   create-indices, off by default, is not run)
//   schema   only that
//   script   read a JSON list of operations on stdin, print a JSON list of their results
//            (the operations of SpringAiHarness.java: save, read, ids, delete, window_add,
//            window_get; M is {"type","text"} with an optional ISO "timestamp" (Cassandra's
//            timestamp metadata), for ASSISTANT optional "tool_calls", for TOOL "responses":
//            [{"id","name","data"}]; a read message prints type, text, timestamp and its tool
//            calls and responses)
//   serve    the same, one JSON list per line in and one result line out, until stdin ends
//            (one JVM and one connection for a whole test module)
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;

import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.springframework.ai.chat.memory.ChatMemoryRepository;
import org.springframework.ai.chat.memory.MessageWindowChatMemory;
import org.springframework.ai.chat.memory.repository.cassandra.CassandraChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.cassandra.CassandraChatMemoryRepositoryConfig;
import org.springframework.ai.chat.memory.repository.mongo.MongoChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.neo4j.Neo4jChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.neo4j.Neo4jChatMemoryRepositoryConfig;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.data.mongodb.core.MongoTemplate;

public class SpringAi11Harness {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TS = CassandraChatMemoryRepository.CONVERSATION_TS;

    public static void main(String[] args) throws Exception {
        if (args.length == 5 && args[0].equals("cassandra")) {
            String[] hostPort = args[1].split(":");
            DriverConfigLoader config = DriverConfigLoader.programmaticBuilder()
                    .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(60))
                    .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(30))
                    .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, Duration.ofSeconds(60))
                    .build();
            try (CqlSession session = CqlSession.builder()
                    .addContactPoint(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])))
                    .withLocalDatacenter(args[2])
                    .withConfigLoader(config)
                    .build()) {
                run(CassandraChatMemoryRepository.create(CassandraChatMemoryRepositoryConfig.builder()
                        .withCqlSession(session).withKeyspaceName(args[3]).build()), args[4]);
            }
        } else if (args.length == 3 && args[0].equals("neo4j")) {
            try (Driver driver = GraphDatabase.driver(args[1], AuthTokens.none())) {
                run(new Neo4jChatMemoryRepository(
                        Neo4jChatMemoryRepositoryConfig.builder().withDriver(driver).build()), args[2]);
            }
        } else if (args.length == 4 && args[0].equals("mongo")) {
            try (MongoClient client = MongoClients.create(args[1])) {
                run(MongoChatMemoryRepository.builder()
                        .mongoTemplate(new MongoTemplate(client, args[2])).build(), args[3]);
            }
        } else {
            System.err.println("usage: SpringAi11Harness cassandra HOST:PORT DC KEYSPACE COMMAND"
                    + " | neo4j BOLT_URI COMMAND | mongo MONGODB_URI DATABASE COMMAND"
                    + " (COMMAND: schema|script|serve)");
            System.exit(2);
        }
    }

    static void run(ChatMemoryRepository repo, String command) throws IOException {
        switch (command) {
            case "schema" -> System.out.println(JSON.writeValueAsString(Map.of("ok", true)));
            case "script" -> System.out.println(JSON.writeValueAsString(
                    script(repo, JSON.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8)))));
            case "serve" -> {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    System.out.println(JSON.writeValueAsString(script(repo, JSON.readTree(line))));
                    System.out.flush();
                }
            }
            default -> {
                System.err.println("unknown command " + command);
                System.exit(2);
            }
        }
    }

    static List<Object> script(ChatMemoryRepository repo, JsonNode ops) throws IOException {
        List<Object> results = new ArrayList<>();
        for (JsonNode op : ops) {
            String cid = op.path("cid").asText("");
            switch (op.get("op").asText()) {
                case "save" -> {
                    repo.saveAll(cid, messages(op.get("messages")));
                    results.add(Map.of("ok", true));
                }
                case "read" -> results.add(encode(repo.findByConversationId(cid)));
                case "ids" -> results.add(repo.findConversationIds());
                case "delete" -> {
                    repo.deleteByConversationId(cid);
                    results.add(Map.of("ok", true));
                }
                case "window_add" -> {
                    window(repo, op.get("max").asInt()).add(cid, messages(op.get("messages")));
                    results.add(Map.of("ok", true));
                }
                case "window_get" -> results.add(encode(window(repo, op.get("max").asInt()).get(cid)));
                default -> throw new IllegalArgumentException("unknown op " + op);
            }
        }
        return results;
    }

    static MessageWindowChatMemory window(ChatMemoryRepository repo, int max) {
        return MessageWindowChatMemory.builder().chatMemoryRepository(repo).maxMessages(max).build();
    }

    static List<Message> messages(JsonNode list) {
        List<Message> out = new ArrayList<>();
        for (JsonNode m : list) {
            String text = m.path("text").asText("");
            Map<String, Object> metadata = new LinkedHashMap<>();
            if (m.hasNonNull("timestamp")) {
                metadata.put(TS, Instant.parse(m.get("timestamp").asText()));
            }
            out.add(switch (m.get("type").asText()) {
                case "USER" -> UserMessage.builder().text(text).metadata(metadata).build();
                case "SYSTEM" -> SystemMessage.builder().text(text).metadata(metadata).build();
                case "ASSISTANT" -> {
                    List<AssistantMessage.ToolCall> calls = new ArrayList<>();
                    for (JsonNode c : m.path("tool_calls")) {
                        calls.add(new AssistantMessage.ToolCall(c.get("id").asText(), "function",
                                c.get("name").asText(), c.path("arguments").asText("{}")));
                    }
                    yield AssistantMessage.builder().content(text).properties(metadata)
                            .toolCalls(calls).build();
                }
                case "TOOL" -> {
                    List<ToolResponseMessage.ToolResponse> responses = new ArrayList<>();
                    for (JsonNode r : m.path("responses")) {
                        responses.add(new ToolResponseMessage.ToolResponse(r.get("id").asText(),
                                r.get("name").asText(), r.get("data").asText()));
                    }
                    yield ToolResponseMessage.builder().responses(responses).build();
                }
                default -> throw new IllegalArgumentException("unknown message type " + m);
            });
        }
        return out;
    }

    static List<Map<String, Object>> encode(List<Message> messages) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Message m : messages) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("type", m.getMessageType().name());
            row.put("text", m.getText());
            Object ts = m.getMetadata().get(TS);
            if (ts != null) {
                row.put("timestamp", ts.toString());
            }
            if (m instanceof AssistantMessage a && a.hasToolCalls()) {
                List<Map<String, Object>> calls = new ArrayList<>();
                for (AssistantMessage.ToolCall c : a.getToolCalls()) {
                    calls.add(Map.of("id", c.id(), "name", c.name(), "arguments", c.arguments()));
                }
                row.put("tool_calls", calls);
            }
            if (m instanceof ToolResponseMessage t) {
                List<Map<String, Object>> responses = new ArrayList<>();
                for (ToolResponseMessage.ToolResponse r : t.getResponses()) {
                    responses.add(Map.of("id", r.id(), "name", r.name(), "data", r.responseData()));
                }
                row.put("responses", responses);
            }
            out.add(row);
        }
        return out;
    }
}
