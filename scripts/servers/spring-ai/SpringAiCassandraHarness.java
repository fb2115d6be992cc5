// Drives Spring AI's own CassandraChatMemoryRepository (and its MessageWindowChatMemory)
// against the Cassandra node chatmem's tests use, so chatmem's Spring AI layout on Cassandra
// is checked against Spring itself. Spring AI 1.1 (Jackson 2): its Cassandra repository was not
// on Maven Central at 2.0. Compiled once by scripts/install/spring-ai.sh.
//
// Usage: java -cp "lib/*:classes" SpringAiCassandraHarness HOST:PORT DATACENTER KEYSPACE COMMAND
//   schema   build the repository with Spring's defaults (initialize-schema true: it creates
//            its keyspace, type and table when missing)
//   script   read a JSON list of operations on stdin, print a JSON list of their results
//            (the operations of SpringAiHarness.java: save, read, ids, delete, window_add,
//            window_get; M is {"type","text"} with an optional ISO "timestamp" and, for
//            ASSISTANT, optional "tool_calls")
//   serve    the same, one JSON list per line in and one result line out, until stdin ends
//            (one JVM and one session for a whole test module)
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

import org.springframework.ai.chat.memory.ChatMemoryRepository;
import org.springframework.ai.chat.memory.MessageWindowChatMemory;
import org.springframework.ai.chat.memory.repository.cassandra.CassandraChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.cassandra.CassandraChatMemoryRepositoryConfig;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.UserMessage;

public class SpringAiCassandraHarness {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TS = CassandraChatMemoryRepository.CONVERSATION_TS;

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: SpringAiCassandraHarness HOST:PORT DC KEYSPACE schema|script|serve");
            System.exit(2);
        }
        String[] hostPort = args[0].split(":");
        DriverConfigLoader config = DriverConfigLoader.programmaticBuilder()
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(60))
                .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(30))
                .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, Duration.ofSeconds(60))
                .build();
        try (CqlSession session = CqlSession.builder()
                .addContactPoint(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])))
                .withLocalDatacenter(args[1])
                .withConfigLoader(config)
                .build()) {
            CassandraChatMemoryRepository repo = CassandraChatMemoryRepository.create(
                    CassandraChatMemoryRepositoryConfig.builder()
                            .withCqlSession(session)
                            .withKeyspaceName(args[2])
                            .build());
            switch (args[3]) {
                case "schema" -> System.out.println(JSON.writeValueAsString(Map.of("keyspace", args[2])));
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
                    System.err.println("unknown command " + args[3]);
                    System.exit(2);
                }
            }
        }
    }

    static List<Object> script(CassandraChatMemoryRepository repo, JsonNode ops) throws IOException {
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
            String text = m.get("text").asText();
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
            row.put("timestamp", ts == null ? null : ts.toString());
            out.add(row);
        }
        return out;
    }
}
