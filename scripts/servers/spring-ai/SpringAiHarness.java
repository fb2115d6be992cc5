// Drives Spring AI's own JdbcChatMemoryRepository (and its MessageWindowChatMemory) against a
// database chatmem's tests also use, so chatmem's Spring AI layout is checked against Spring
// itself rather than against our reading of it. Compiled once by scripts/install/spring-ai.sh.
//
// Usage: java -Duser.timezone=UTC -cp "lib/*:classes" SpringAiHarness JDBC_URL COMMAND
//   schema   run Spring's own schema-<platform>.sql from its jar (what initialize-schema does)
//   script   read a JSON list of operations on stdin, print a JSON list of their results:
//            {"op":"save","cid":C,"messages":[M...]}     repository.saveAll
//            {"op":"read","cid":C}                       repository.findByConversationId
//            {"op":"ids"}                                repository.findConversationIds
//            {"op":"delete","cid":C}                     repository.deleteByConversationId
//            {"op":"window_add","cid":C,"max":N,"messages":[M...]}  MessageWindowChatMemory.add
//            {"op":"window_get","cid":C,"max":N}         MessageWindowChatMemory.get
//            M is {"type":"USER|ASSISTANT|SYSTEM","text":T} with an optional "timestamp"
//            (ISO instant, passed as Spring's timestamp metadata) and, for ASSISTANT, optional
//            "tool_calls":[{"id","name","arguments"}]; a read message prints type, text and
//            timestamp.
//   dump     print every conversation: {"cid":[M...], ...}
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import org.springframework.ai.chat.memory.ChatMemoryRepository;
import org.springframework.ai.chat.memory.MessageWindowChatMemory;
import org.springframework.ai.chat.memory.repository.jdbc.JdbcChatMemoryRepository;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

public class SpringAiHarness {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TS = JdbcChatMemoryRepository.CONVERSATION_TS;

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: SpringAiHarness JDBC_URL schema|script|dump");
            System.exit(2);
        }
        DataSource ds = new DriverManagerDataSource(args[0]);
        switch (args[1]) {
            case "schema" -> System.out.println(JSON.writeValueAsString(schema(ds)));
            case "script" -> System.out.println(JSON.writeValueAsString(script(ds, System.in)));
            case "dump" -> System.out.println(JSON.writeValueAsString(dump(repository(ds))));
            default -> {
                System.err.println("unknown command " + args[1]);
                System.exit(2);
            }
        }
    }

    static JdbcChatMemoryRepository repository(DataSource ds) {
        return JdbcChatMemoryRepository.builder().jdbcTemplate(new JdbcTemplate(ds)).build();
    }

    /** Spring's own DDL script for this database, read from its jar (as Boot's initializer does). */
    static Map<String, Object> schema(DataSource ds) throws Exception {
        String product;
        try (Connection conn = ds.getConnection()) {
            product = conn.getMetaData().getDatabaseProductName();
        }
        String platform = switch (product) {
            case "PostgreSQL" -> "postgresql";
            case "MariaDB" -> "mariadb";
            case "MySQL" -> "mysql";
            case "SQLite" -> "sqlite";
            default -> throw new IllegalArgumentException("no Spring schema script for " + product);
        };
        String path = "org/springframework/ai/chat/memory/repository/jdbc/schema-" + platform + ".sql";
        new ResourceDatabasePopulator(new ClassPathResource(path)).execute(ds);
        return Map.of("script", path);
    }

    static List<Object> script(DataSource ds, InputStream in) throws IOException {
        JdbcChatMemoryRepository repo = repository(ds);
        JsonNode ops = JSON.readTree(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        List<Object> results = new ArrayList<>();
        for (JsonNode op : ops) {
            String cid = op.path("cid").asString("");
            switch (op.get("op").asString()) {
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

    static Map<String, Object> dump(JdbcChatMemoryRepository repo) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String cid : repo.findConversationIds()) {
            out.put(cid, encode(repo.findByConversationId(cid)));
        }
        return out;
    }

    static List<Message> messages(JsonNode list) {
        List<Message> out = new ArrayList<>();
        for (JsonNode m : list) {
            String text = m.get("text").asString();
            Map<String, Object> metadata = new LinkedHashMap<>();
            if (m.hasNonNull("timestamp")) {
                metadata.put(TS, Instant.parse(m.get("timestamp").asString()));
            }
            out.add(switch (m.get("type").asString()) {
                case "USER" -> UserMessage.builder().text(text).metadata(metadata).build();
                case "SYSTEM" -> SystemMessage.builder().text(text).metadata(metadata).build();
                case "ASSISTANT" -> {
                    List<AssistantMessage.ToolCall> calls = new ArrayList<>();
                    for (JsonNode c : m.path("tool_calls")) {
                        calls.add(new AssistantMessage.ToolCall(c.get("id").asString(), "function",
                                c.get("name").asString(), c.path("arguments").asString("{}")));
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
