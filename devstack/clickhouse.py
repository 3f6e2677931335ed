"""A throwaway ClickHouse cluster for the click store's tests: one ZooKeeper
and shards x replicas of Debian 12's `clickhouse-server` (18.16; bin/setup
installs it and `zookeeperd`), as ordinary processes on free ports in a
temporary folder, the packages' own services untouched.

`start()` returns once every node answers and holds a ZooKeeper session:
18.16 crashes on a replicated statement without one. `cleanup()` stops them
all and removes the folder."""

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from devstack.net import free_port, wait_for_port

START_TIMEOUT = 60.0  # seconds for ZooKeeper, then every node, to answer
ZOOKEEPER_CLASSPATH = "/usr/share/java/zookeeper.jar"
CLICKHOUSE_SERVER = "/usr/sbin/clickhouse-server"


@dataclass
class Node:
    """One clickhouse-server: shard and replica count from 1."""

    shard: int
    replica: int
    tcp_port: int
    http_port: int
    interserver_port: int
    root: Path
    process: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return f"s{self.shard}r{self.replica}"

    @property
    def url(self) -> str:
        return f"clickhouse://default@127.0.0.1:{self.tcp_port}/default"

    def client(self, **settings):
        from clickhouse_driver import Client

        return Client("127.0.0.1", port=self.tcp_port, settings=settings, connect_timeout=2)


class ClickHouseCluster:
    """ZooKeeper and `shards` x `replicas` nodes in cluster `cluster`, each
    shard's replicas holding the same tables (internal_replication: a
    Distributed table writes a row to one replica, replication copies it)."""

    def __init__(
        self, *, shards: int = 2, replicas: int = 2, cluster: str = "slingshot", scratch: Path | None = None
    ) -> None:
        self.cluster = cluster
        # `scratch`: the folder to make the cluster's own in (a tmpfs, for the tests' cluster).
        self.root = Path(tempfile.mkdtemp(prefix="slingshot-clickhouse-", dir=scratch))
        self.zk_port = free_port()
        self.zookeeper: subprocess.Popen | None = None
        self.nodes = [
            Node(shard, replica, free_port(), free_port(), free_port(), self.root / f"s{shard}r{replica}")
            for shard in range(1, shards + 1)
            for replica in range(1, replicas + 1)
        ]

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    def start(self) -> "ClickHouseCluster":
        try:
            self.start_zookeeper()
            for node in self.nodes:
                self._write_config(node)
                self.start_node(node, wait=False)
            for node in self.nodes:
                self.wait_for_node(node)
        except BaseException:
            self.cleanup()
            raise
        return self

    def start_zookeeper(self) -> None:
        data = self.root / "zookeeper"
        data.mkdir(exist_ok=True)
        conf = data / "zoo.cfg"
        conf.write_text(
            f"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort={self.zk_port}\n"
            "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
            "4lw.commands.whitelist=ruok\n"
        )
        java = shutil.which("java") or "java"
        cmd = [
            java,
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            ZOOKEEPER_CLASSPATH,
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(conf),
        ]
        self.zookeeper = self._spawn(cmd, data / "zookeeper.log")
        wait_for_port(self.zk_port, timeout=START_TIMEOUT, process=self.zookeeper)

    def stop_zookeeper(self) -> None:
        if self.zookeeper and self.zookeeper.poll() is None:
            self.zookeeper.terminate()
            self.zookeeper.wait(timeout=30)

    def start_node(self, node: Node, *, wait: bool = True) -> None:
        node.process = self._spawn(
            [CLICKHOUSE_SERVER, f"--config-file={node.root / 'config.xml'}"], node.root / "stdout.log", cwd=node.root
        )
        if wait:
            self.wait_for_node(node)

    def stop_node(self, node: Node) -> None:
        if node.process and node.process.poll() is None:
            node.process.terminate()
            node.process.wait(timeout=30)

    def wait_for_node(self, node: Node) -> None:
        """Until the node answers a query that needs its ZooKeeper session."""
        wait_for_port(node.tcp_port, timeout=START_TIMEOUT, process=node.process)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                node.client().execute("SELECT count() FROM system.zookeeper WHERE path = '/'")
                return
            except Exception as error:  # not yet connected to ZooKeeper, or still starting
                if node.process.poll() is not None:
                    raise RuntimeError(f"clickhouse-server {node.name} exited: see {node.root}") from error
                if time.monotonic() > deadline:
                    raise TimeoutError(f"clickhouse-server {node.name} has no ZooKeeper session: {error}") from error
                time.sleep(0.1)

    def _spawn(self, cmd: list[str], log_path: Path, **popen) -> subprocess.Popen:
        with open(log_path, "ab") as log:
            return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **popen)

    def _write_config(self, node: Node) -> None:
        node.root.mkdir(parents=True, exist_ok=True)
        (node.root / "users.xml").write_text(USERS_XML)
        (node.root / "config.xml").write_text(self.config_xml(node))

    def config_xml(self, node: Node) -> str:
        shards = "".join(
            "<shard><internal_replication>true</internal_replication>"
            + "".join(
                f"<replica><host>127.0.0.1</host><port>{other.tcp_port}</port></replica>"
                for other in self.nodes
                if other.shard == shard
            )
            + "</shard>"
            for shard in sorted({other.shard for other in self.nodes})
        )
        root = escape(str(node.root))
        return f"""<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>{root}/server.log</log><errorlog>{root}/error.log</errorlog>
        <size>10M</size><count>1</count></logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{node.tcp_port}</tcp_port>
    <http_port>{node.http_port}</http_port>
    <interserver_http_port>{node.interserver_port}</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <path>{root}/data/</path>
    <tmp_path>{root}/tmp/</tmp_path>
    <user_files_path>{root}/user_files/</user_files_path>
    <format_schema_path>{root}/format_schemas/</format_schema_path>
    <users_config>{root}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>67108864</mark_cache_size>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <max_concurrent_queries>50</max_concurrent_queries>
    <remote_servers><{self.cluster}>{shards}</{self.cluster}></remote_servers>
    <zookeeper><node><host>127.0.0.1</host><port>{self.zk_port}</port></node>
        <session_timeout_ms>10000</session_timeout_ms></zookeeper>
    <macros><shard>{node.shard}</shard><replica>{node.name}</replica></macros>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
    <!-- The blocks past the deduplication window (replicated_deduplication_window)
         forgotten within seconds rather than half a minute: what a test inserts
         meets a cluster as one that has run a while. -->
    <merge_tree><cleanup_delay_period>1</cleanup_delay_period>
        <cleanup_delay_period_random_add>1</cleanup_delay_period_random_add></merge_tree>
</yandex>
"""

    def cleanup(self) -> None:
        """Kills them all (what they hold is thrown away: a clean shutdown of
        18.16 takes seconds) and removes the folder."""
        for process in [node.process for node in self.nodes] + [self.zookeeper]:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


USERS_XML = """<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>1000000000</max_memory_usage></default></profiles>
    <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
        <profile>default</profile><quota>default</quota></default></users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default></quotas>
</yandex>
"""
