package io.rebalancelens.agent;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Bounded, asynchronous emission of events through the agent's own producer (consumer_agent/emitter.py's rules).
 *
 * <p>The application thread only appends to a bounded deque under a short lock; a daemon thread asks the cluster
 * id, creates the topic if missing, serialises and produces. When the telemetry cluster is away nothing blocks:
 * the buffer keeps the newest {@code capacity} events, the oldest are dropped and counted, and the count is
 * re-reported in agent_health events until one of them is delivered. Nothing here throws into the host.
 */
final class TelemetryEmitter {
    private static final Logger LOG = Logger.getLogger("io.rebalancelens.agent");
    /** How long events wait for the consumer's cluster id before they go without it (as the Python agent). */
    private static final long CLUSTER_ID_WAIT_MS = AgentSpec.get().longConstant("cluster_id_wait_ms");
    private static final long ADMIN_TIMEOUT_MS = 5_000;
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(2);
    private static final ObjectMapper JSON = new ObjectMapper();

    final int capacity;
    private final String topic;
    private final Map<String, Object> producerConfig;
    private final Map<String, Object> clusterConfig;
    private final byte[] key;
    private final ArrayDeque<Map<String, Object>> buffer = new ArrayDeque<>();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private volatile long acknowledgedDropped;
    private volatile String lastError;
    private volatile long reportedErrors;
    private volatile boolean stopping;
    private volatile String clusterId;
    private final Thread thread;

    /** {@code producerConfig} null: telemetry is off (no cluster named): no thread, offered events are discarded. */
    TelemetryEmitter(String topic, Map<String, Object> producerConfig, Map<String, Object> clusterConfig,
                     int capacity, String key) {
        this.topic = topic;
        this.producerConfig = producerConfig;
        this.clusterConfig = clusterConfig;
        this.capacity = capacity;
        this.key = key.getBytes(StandardCharsets.UTF_8);
        this.thread = producerConfig == null ? null : new Thread(this::run, "rebalance-lens-emitter");
        if (thread != null) {
            thread.setDaemon(true);
            thread.start();
        }
    }

    boolean enabled() {
        return thread != null;
    }

    /** Never blocks: a full buffer drops its oldest event and counts it. */
    void offer(Map<String, Object> event) {
        if (thread == null) {
            return;
        }
        synchronized (buffer) {
            if (buffer.size() >= capacity) {
                buffer.pollFirst();
                dropped.incrementAndGet();
            }
            buffer.addLast(event);
            buffer.notifyAll();
        }
    }

    int buffered() {
        synchronized (buffer) {
            return buffer.size();
        }
    }

    long droppedTotal() {
        return dropped.get();
    }

    long acknowledgedDropped() {
        return acknowledgedDropped;
    }

    long errorsTotal() {
        return errors.get();
    }

    String lastError() {
        return lastError;
    }

    /** Drops not yet carried by a delivered agent_health event, or errors not yet reported in one. */
    boolean needsHealthReport() {
        return dropped.get() > acknowledgedDropped || errors.get() > reportedErrors;
    }

    /** An agent_health event now carries {@code errorsTotal}. */
    void healthReported(long errorsTotal) {
        reportedErrors = errorsTotal;
    }

    /** Counted, logged once: the host never sees a telemetry failure. */
    void noteError(String message) {
        if (errors.getAndIncrement() == 0) {
            LOG.warning("rebalance-lens: telemetry failure (counted in agent_health, logged once): " + message);
        }
        lastError = message;
    }

    /** Drain what can be sent within {@code timeoutMs}, then stop the thread (its producer is closed by it). */
    void close(long timeoutMs) {
        if (thread == null) {
            return;
        }
        stopping = true;
        synchronized (buffer) {
            buffer.notifyAll();
        }
        try {
            thread.join(timeoutMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        long deadline = System.currentTimeMillis() + CLUSTER_ID_WAIT_MS;
        KafkaProducer<byte[], byte[]> producer = null;
        try {
            producer = new KafkaProducer<>(withDefaults(producerConfig), new ByteArraySerializer(),
                    new ByteArraySerializer());
            prepare(deadline);
            while (true) {
                List<Map<String, Object>> batch = take();
                if (batch.isEmpty() && stopping) {
                    break;
                }
                for (Map<String, Object> event : batch) {
                    send(producer, event);
                }
            }
            producer.flush();
        } catch (RuntimeException e) {
            noteError("emitter: " + e);
        } finally {
            if (producer != null) {
                producer.close(CLOSE_TIMEOUT);
            }
        }
    }

    /**
     * The cluster id and the topic, from an admin client closed once answered (without waiting for what it still
     * asks: a cluster away must not hold the events back); bounded, failures counted.
     */
    private void prepare(long deadline) {
        Map<String, Object> admin = new HashMap<>(clusterConfig != null ? clusterConfig : producerConfig);
        admin.put("client.id", "rebalance-lens-agent-admin");
        Admin client = Admin.create(admin);
        try {
            if (clusterConfig != null && (clusterId = clusterId(client, deadline)) == null) {
                return;  // the consumer's cluster did not answer in time: events go without its id
            }
            if (clusterConfig == null || !producerConfig.get(AgentOptions.BOOTSTRAP).equals(
                    clusterConfig.get(AgentOptions.BOOTSTRAP))) {
                return;  // the telemetry topic lives on another cluster: its producer's auto-creation or its operators
            }
            createTopic(client);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            noteError("emitter: cluster id / topic: " + e);
        } finally {
            client.close(Duration.ZERO);
        }
    }

    /**
     * The consumer's cluster id, waited for until {@code deadline} or until close() (which sends what is buffered
     * without it at once, as the Python agent does); null then.
     */
    private String clusterId(Admin client, long deadline) throws InterruptedException, ExecutionException {
        KafkaFuture<String> answer = client.describeCluster().clusterId();
        while (!stopping && System.currentTimeMillis() < deadline) {
            try {
                return answer.get(Math.min(100, Math.max(1, deadline - System.currentTimeMillis())),
                        TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException notYet) {
                // ask again, unless the consumer is closing
            }
        }
        return null;
    }

    private void createTopic(Admin client) throws InterruptedException {
        try {
            client.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all()
                    .get(ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                noteError("emitter: create topic " + topic + ": " + e.getCause());
            }
        } catch (java.util.concurrent.TimeoutException e) {
            noteError("emitter: create topic " + topic + ": timed out");
        }
    }

    private List<Map<String, Object>> take() {
        synchronized (buffer) {
            while (buffer.isEmpty() && !stopping) {
                try {
                    buffer.wait(200);
                } catch (InterruptedException e) {
                    stopping = true;
                }
            }
            List<Map<String, Object>> batch = new ArrayList<>(buffer);
            buffer.clear();
            return batch;
        }
    }

    private void send(KafkaProducer<byte[], byte[]> producer, Map<String, Object> event) {
        try {
            if (clusterId != null) {
                event.put("cluster_id", clusterId);
            }
            byte[] value = JSON.writeValueAsBytes(event);
            Object health = "agent_health".equals(event.get("kind")) ? event.get("body") : null;
            producer.send(new ProducerRecord<>(topic, key, value), (metadata, error) -> {
                if (error != null) {
                    noteError("emitter: delivery: " + error);
                } else if (health instanceof Map<?, ?>) {
                    acknowledgedDropped = Math.max(acknowledgedDropped,
                            ((Number) ((Map<?, ?>) health).get("dropped_total")).longValue());
                }
            });
        } catch (Exception e) {
            noteError("emitter: send: " + e);
        }
    }

    private static Map<String, Object> withDefaults(Map<String, Object> config) {
        Map<String, Object> all = new HashMap<>(Map.of("client.id", "rebalance-lens-agent", "linger.ms", 50,
                "delivery.timeout.ms", 60_000, "request.timeout.ms", 30_000, "reconnect.backoff.max.ms", 2_000,
                "max.block.ms", 10_000));  // the emitter thread's wait, never the host's
        all.putAll(config);
        return all;
    }
}
