package dev.icefloe.iceberg;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.metrics.ScanReport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.util.JedisURIHelper;

/**
 * One Redis's queue of scan reports and the daemon thread that appends them to its stream
 * ({@code <prefix>:{r}:reads}, capped near {@code max-len} entries), shared by every catalog of
 * the JVM that names the same Redis. A batch that fails is dropped and counted, the thread
 * waits (1 s, doubling to 30 s) and connects again; meanwhile the queue fills and drops what
 * does not fit. What was dropped is added to {@code <prefix>:{r}:dropped} once Redis answers
 * again, so icefloe can say how much it did not see.
 */
final class ReadSink implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(ReadSink.class);
  private static final Map<Settings, ReadSink> SINKS = new ConcurrentHashMap<>();
  static final int BATCH = 256;
  private static final int TIMEOUT_MS = 2_000;
  private static final long MAX_BACKOFF_MS = 30_000;

  record Settings(String url, String prefix, boolean cluster, int queueSize, int maxLen) {
    String stream() {
      return prefix + ":{r}:reads";
    }

    String droppedKey() {
      return prefix + ":{r}:dropped";
    }

    @Override
    public String toString() { // never the URL: it may hold a password
      return "ReadSink(" + prefix + ")";
    }
  }

  private record Pending(ScanReport report, boolean own, long at) {}

  private final Settings settings;
  private final ArrayBlockingQueue<Pending> queue;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong unreported = new AtomicLong(); // dropped, not yet added in Redis
  private final AtomicLong inFlight = new AtomicLong();
  private UnifiedJedis client;

  private ReadSink(Settings settings) {
    this.settings = settings;
    this.queue = new ArrayBlockingQueue<>(settings.queueSize());
  }

  static ReadSink shared(Settings settings) {
    uri(settings.url()); // a bad URL fails the reporter's initialize, once, not every report
    return SINKS.computeIfAbsent(
        settings,
        s -> {
          ReadSink sink = new ReadSink(s);
          Thread t = new Thread(sink, "icefloe-read-reports");
          t.setDaemon(true);
          t.start();
          return sink;
        });
  }

  void offer(ScanReport report, boolean own) {
    inFlight.incrementAndGet();
    if (!queue.offer(new Pending(report, own, System.currentTimeMillis()))) {
      inFlight.decrementAndGet();
      countDropped(1);
    }
  }

  void countDropped(long n) {
    dropped.addAndGet(n);
    unreported.addAndGet(n);
  }

  static long[] totals() {
    long sent = 0;
    long dropped = 0;
    for (ReadSink s : SINKS.values()) {
      sent += s.sent.get();
      dropped += s.dropped.get();
    }
    return new long[] {sent, dropped};
  }

  static boolean flushAll(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    for (ReadSink s : SINKS.values()) {
      while (s.inFlight.get() > 0) {
        if (System.currentTimeMillis() > deadline) {
          return false;
        }
        Thread.sleep(5);
      }
    }
    return true;
  }

  @Override
  public void run() {
    long backoff = 0;
    List<Pending> batch = new ArrayList<>(BATCH);
    while (true) {
      try {
        Pending first = queue.poll(1, TimeUnit.SECONDS);
        if (first == null && unreported.get() == 0) {
          continue;
        }
        batch.clear();
        if (first != null) {
          batch.add(first);
          queue.drainTo(batch, BATCH - 1);
        }
        send(batch);
        backoff = 0;
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) { // Redis down, slow or refusing: drop, count, wait, retry
        countDropped(batch.size());
        inFlight.addAndGet(-batch.size());
        close();
        backoff = backoff == 0 ? 1_000 : Math.min(MAX_BACKOFF_MS, backoff * 2);
        LOG.warn(
            "icefloe: scan reports not sent to Redis ({}): {} dropped so far; next try in {} s",
            e.getClass().getSimpleName(),
            dropped.get(),
            backoff / 1000);
        if (!pause(backoff)) {
          return;
        }
      }
    }
  }

  private void send(List<Pending> batch) {
    UnifiedJedis c = client();
    XAddParams cap = XAddParams.xAddParams().maxLen(settings.maxLen()).approximateTrimming();
    try (AbstractPipeline p = c.pipelined()) {
      for (Pending r : batch) {
        p.xadd(settings.stream(), cap, ReadRecord.of(r.report(), r.own(), r.at()));
      }
      long lost = unreported.get();
      if (lost > 0) {
        p.incrBy(settings.droppedKey(), lost);
      }
      p.sync();
      unreported.addAndGet(-lost);
    }
    sent.addAndGet(batch.size());
    inFlight.addAndGet(-batch.size());
  }

  private UnifiedJedis client() {
    if (client == null) {
      URI uri = uri(settings.url());
      DefaultJedisClientConfig.Builder config =
          DefaultJedisClientConfig.builder()
              .connectionTimeoutMillis(TIMEOUT_MS)
              .socketTimeoutMillis(TIMEOUT_MS)
              .user(JedisURIHelper.getUser(uri))
              .password(JedisURIHelper.getPassword(uri))
              .ssl(JedisURIHelper.isRedisSSLScheme(uri))
              .clientName("icefloe-read-reports");
      HostAndPort node = JedisURIHelper.getHostAndPort(uri);
      if (settings.cluster()) {
        JedisClientConfig c = config.build();
        client = RedisClusterClient.builder().nodes(Set.of(node)).clientConfig(c).build();
      } else {
        JedisClientConfig c = config.database(JedisURIHelper.getDBIndex(uri)).build();
        client = RedisClient.builder().hostAndPort(node).clientConfig(c).build();
      }
    }
    return client;
  }

  private void close() {
    if (client != null) {
      try {
        client.close();
      } catch (RuntimeException ignored) { // it is being replaced
      }
      client = null;
    }
  }

  private static boolean pause(long millis) {
    try {
      Thread.sleep(millis);
      return true;
    } catch (InterruptedException e) {
      return false;
    }
  }

  private static URI uri(String url) {
    URI uri;
    try {
      uri = URI.create(url);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(ReadReporter.URL + " is not a URL");
    }
    if (!JedisURIHelper.isValid(uri) || !JedisURIHelper.isRedisScheme(uri)) {
      throw new IllegalArgumentException(
          ReadReporter.URL + " must be a redis:// or rediss:// URL with a host and port");
    }
    return uri;
  }
}
