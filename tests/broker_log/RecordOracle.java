// Kafka's own serde as the test oracle for pipelines/broker_log: compiled by the tests against
// the kafka jar set of the version under test, never shipped.
//   decode: stdin lines "<key hex> <value hex or ->" -> one JSON line each, as Kafka reads them
//   encode: stdin JSON lines {"type","version","key","value"} -> "<key hex> <value hex or ->",
//           written by Kafka's serializer from Kafka's own JSON readers
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolAssignmentJsonConverter;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;
import org.apache.kafka.common.message.ConsumerProtocolSubscriptionJsonConverter;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class RecordOracle {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HexFormat HEX = HexFormat.of();
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String out;
            try {
                out = args[0].equals("decode") ? decode(line) : encode(line);
            } catch (RuntimeException e) {
                ObjectNode error = JSON.createObjectNode();
                error.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
                out = error.toString();
            }
            System.out.println(out);
        }
    }

    static String decode(String line) {
        String[] parts = line.trim().split(" ");
        ByteBuffer key = ByteBuffer.wrap(HEX.parseHex(parts[0]));
        ByteBuffer value = parts[1].equals("-") ? null : ByteBuffer.wrap(HEX.parseHex(parts[1]));
        short type = ByteBuffer.wrap(HEX.parseHex(parts[0])).getShort();
        CoordinatorRecord record = SERDE.deserialize(key, value);
        ObjectNode node = JSON.createObjectNode();
        node.put("type", type);
        node.set("key", CoordinatorRecordJsonConverters.writeRecordKeyAsJson(record.key()));
        if (record.value() == null) {
            node.putNull("version");
            node.putNull("value");
        } else {
            short version = record.value().version();
            JsonNode json = CoordinatorRecordJsonConverters.writeRecordValueAsJson(record.value().message(), version);
            if (type == 2) addConsumerProtocol((ObjectNode) json);
            node.put("version", version);
            node.set("value", json);
        }
        return node.toString();
    }

    // A classic consumer group's member bytes, read as ConsumerProtocol does (a newer version as the newest).
    static void addConsumerProtocol(ObjectNode group) {
        if (!"consumer".equals(group.path("protocolType").asText())) return;
        for (JsonNode member : (ArrayNode) group.get("members")) {
            ObjectNode m = (ObjectNode) member;
            byte[] sub = Base64.getDecoder().decode(m.get("subscription").asText());
            byte[] asg = Base64.getDecoder().decode(m.get("assignment").asText());
            if (sub.length > 0) {
                ByteBuffer b = ByteBuffer.wrap(sub);
                short v = (short) Math.min(b.getShort(), ConsumerProtocolSubscription.HIGHEST_SUPPORTED_VERSION);
                m.set("subscription_decoded", ConsumerProtocolSubscriptionJsonConverter.write(
                    new ConsumerProtocolSubscription(new ByteBufferAccessor(b), v), v));
            }
            if (asg.length > 0) {
                ByteBuffer b = ByteBuffer.wrap(asg);
                short v = (short) Math.min(b.getShort(), ConsumerProtocolAssignment.HIGHEST_SUPPORTED_VERSION);
                m.set("assignment_decoded", ConsumerProtocolAssignmentJsonConverter.write(
                    new ConsumerProtocolAssignment(new ByteBufferAccessor(b), v), v));
            }
        }
    }

    static String encode(String line) throws Exception {
        JsonNode spec = JSON.readTree(line);
        short type = (short) spec.get("type").asInt();
        ApiMessage key = CoordinatorRecordJsonConverters.readRecordKeyFromJson(spec.get("key"), type);
        CoordinatorRecord record;
        if (spec.get("value").isNull()) {
            record = CoordinatorRecord.tombstone(key);
        } else {
            short version = (short) spec.get("version").asInt();
            ApiMessage value = CoordinatorRecordJsonConverters.readRecordValueFromJson(spec.get("value"), type, version);
            record = CoordinatorRecord.record(key, new ApiMessageAndVersion(value, version));
        }
        byte[] v = SERDE.serializeValue(record);
        return HEX.formatHex(SERDE.serializeKey(record)) + " " + (v == null ? "-" : HEX.formatHex(v));
    }
}
