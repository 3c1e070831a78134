import io.rebalancelens.agent.InstrumentedConsumer;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * tests/jvm_agent/test_commit_on_revoke.py's application (java's single-file launcher): members that process
 * records on a thread pool (random per-record delays, out of order) and call markProcessed, through graceful
 * handoffs while a producer keeps writing: a alone, b joins, c joins, a closes, b closes, c reads to the end.
 * Commits come only from the agent's commit-on-revoke (the application commits nothing itself), so without it
 * every handoff re-reads.
 *
 * Arguments: bootstrap topic partitions group telemetry-topic group-protocol commit-on-revoke(true|false)
 * log-file. The log has one line per processed record: "partition offset member"; then a line "agents a=<id> ...".
 */
public final class PoolMembers {
    private static final int WORKERS = 4;
    private static final int MAX_DELAY_MS = 6;
    private static final int RECORDS_PER_S = 600;
    private static final long STEP_MS = 1_500;
    private static final long STEP_TIMEOUT_MS = 60_000;
    private static final ConcurrentLinkedQueue<String> LOG = new ConcurrentLinkedQueue<>();
    private static final Set<String> PROCESSED = ConcurrentHashMap.newKeySet();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[3], telemetry = args[4], protocol = args[5];
        int partitions = Integer.parseInt(args[2]);
        boolean commitOnRevoke = Boolean.parseBoolean(args[6]);
        Producing producing = new Producing(bootstrap, topic, partitions);
        Thread producer = new Thread(producing, "producer");
        producer.start();

        Map<String, Member> members = new HashMap<>();
        for (String role : List.of("a", "b", "c")) {
            members.put(role, new Member(role, bootstrap, topic, group, telemetry, protocol, commitOnRevoke));
        }
        members.get("a").start();
        until("a owns every partition", () -> members.get("a").owned.size() == partitions);
        Thread.sleep(STEP_MS);
        members.get("b").start();
        until("a and b share the partitions", () -> shared(partitions, members.get("a"), members.get("b")));
        Thread.sleep(STEP_MS);
        members.get("c").start();
        until("a, b and c share the partitions",
                () -> shared(partitions, members.get("a"), members.get("b"), members.get("c")));
        Thread.sleep(STEP_MS);
        members.get("a").stop();
        until("b and c share the partitions", () -> shared(partitions, members.get("b"), members.get("c")));
        Thread.sleep(STEP_MS);
        members.get("b").stop();
        until("c owns every partition", () -> members.get("c").owned.size() == partitions);
        producing.running = false;
        producer.join();
        until("every produced record is processed", () -> PROCESSED.size() == producing.acked.get());
        members.get("c").stop();

        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(args[7])))) {
            LOG.forEach(out::println);
            StringBuilder agents = new StringBuilder("agents");
            members.forEach((role, member) -> agents.append(' ').append(role).append('=').append(member.agentId));
            out.println(agents);
        }
    }

    private static boolean shared(int partitions, Member... members) {
        int total = 0;
        for (Member member : members) {
            if (member.owned.isEmpty()) {
                return false;
            }
            total += member.owned.size();
        }
        return total == partitions;
    }

    private static void until(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting until " + what);
            }
            Thread.sleep(20);
        }
    }

    /** Writes RECORDS_PER_S records round-robin over the partitions until stopped; counts the acknowledged. */
    private static final class Producing implements Runnable {
        final AtomicLong acked = new AtomicLong();
        volatile boolean running = true;
        private final KafkaProducer<byte[], byte[]> producer;
        private final String topic;
        private final int partitions;

        Producing(String bootstrap, String topic, int partitions) {
            this.producer = new KafkaProducer<>(Map.of("bootstrap.servers", bootstrap, "linger.ms", 5,
                    "key.serializer", ByteArraySerializer.class, "value.serializer", ByteArraySerializer.class));
            this.topic = topic;
            this.partitions = partitions;
        }

        @Override
        public void run() {
            long sent = 0;
            long start = System.nanoTime();
            while (running) {
                long due = (System.nanoTime() - start) * RECORDS_PER_S / 1_000_000_000L;
                for (; sent < due; sent++) {
                    producer.send(new ProducerRecord<>(topic, (int) (sent % partitions), null, new byte[16]),
                            (metadata, error) -> {
                                if (error == null) {
                                    acked.incrementAndGet();
                                }
                            });
                }
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
            producer.close();
        }
    }

    /** One group member: a polling thread hands records to its pool; workers process, log and mark them. */
    private static final class Member implements ConsumerRebalanceListener {
        final Set<Integer> owned = ConcurrentHashMap.newKeySet();
        volatile String agentId;
        private final String role;
        private final Map<String, Object> config = new HashMap<>();
        private final String topic;
        private final ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
        private final Thread poller = new Thread(this::run);
        private volatile boolean running = true;

        Member(String role, String bootstrap, String topic, String group, String telemetry, String protocol,
               boolean commitOnRevoke) {
            this.role = role;
            this.topic = topic;
            config.putAll(Map.of("bootstrap.servers", bootstrap, "group.id", group, "client.id", role,
                    "group.protocol", protocol, "auto.offset.reset", "earliest", "enable.auto.commit", "false",
                    "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class));
            config.putAll(Map.of("max.poll.records", 50, "lens.telemetry.topic", telemetry,
                    "lens.processing", "explicit", "lens.commit.on.revoke", String.valueOf(commitOnRevoke)));
            poller.setName("poll-" + role);
        }

        void start() {
            poller.start();
        }

        /** The member leaves by close (on its polling thread): a graceful handoff. */
        void stop() throws InterruptedException {
            running = false;
            poller.join(STEP_TIMEOUT_MS);
        }

        private void run() {
            InstrumentedConsumer<byte[], byte[]> consumer = new InstrumentedConsumer<>(config);
            agentId = consumer.agentId();
            consumer.subscribe(List.of(topic), this);
            try {
                while (running) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
                    for (ConsumerRecord<byte[], byte[]> record : records) {
                        pool.execute(() -> process(consumer, record));
                    }
                }
            } finally {
                consumer.close();  // with commit-on-revoke it commits what the pool finished first
                pool.shutdown();
            }
        }

        private void process(InstrumentedConsumer<byte[], byte[]> consumer, ConsumerRecord<byte[], byte[]> record) {
            try {
                Thread.sleep(ThreadLocalRandom.current().nextInt(MAX_DELAY_MS + 1));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            LOG.add(record.partition() + " " + record.offset() + " " + role);
            PROCESSED.add(record.partition() + " " + record.offset());
            consumer.markProcessed(record);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            partitions.forEach(tp -> owned.add(tp.partition()));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            partitions.forEach(tp -> owned.remove(tp.partition()));
        }
    }
}
