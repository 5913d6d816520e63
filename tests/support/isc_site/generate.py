"""dhcpd.conf files made from the grammar the ISC reader maps (and some it refuses), one per
seed: scopes, options, classes, hosts, pools, shared networks, groups, conditionals and
option spaces in random combinations, all in 10.77.0.0/22. The unit tests read many (no
crash, only a ReadError); the integration tests apply a few (every planned object is one
the API takes)."""

from __future__ import annotations

import random


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def ip(self) -> str:
        return f"10.77.{self.rng.randrange(4)}.{self.rng.randrange(256)}"

    def mac(self) -> str:
        if self.rng.random() < 0.1:
            return "01:00:5e:00:00:01"  # multicast: refused
        return "02:" + ":".join(f"{self.rng.randrange(256):02x}" for _ in range(5))

    def option(self) -> str:
        r = self.rng
        return r.choice([
            f'option domain-name "{r.choice(["a.example", "b.example", "bad name"])}";',
            f"option domain-name-servers {self.ip()}, {self.ip()};",
            f"option routers {self.ip()};", f"option ntp-servers {self.ip()};",
            f"option subnet-mask 255.255.{r.choice(['255', '0'])}.0;",
            "option vendor-encapsulated-options 01:04:0a:4d:00:06;",
            f"option PXE.mtftp-ip {self.ip()};", "vendor-option-space PXE;",
            f"option arch {r.randrange(10)};", f'filename "f{r.randrange(3)}";',
            f"next-server {self.ip()};", f"default-lease-time {r.randrange(1, 100_000)};",
            f"max-lease-time {r.randrange(1, 100_000)};",
            f"min-lease-time {r.randrange(0, 1000)};", 'option host-name "h1";',
            f"option site code {r.choice([43, 121, 150, 224, 6, 15])} = "
            f"{r.choice(['text', 'ip-address', 'array of integer 8', 'boolean'])};",
            "option site " + r.choice(["1", "on", "10.77.0.1", '"x"']) + ";",
            "use-host-decl-names on;", 'option tftp-server-name "t";',
            'option bootfile-name "b";', f"option interface-mtu {r.choice([1400, 20])};",
            'option domain-search "a.example", "b.example";'])

    def options(self, most: int) -> str:
        return " ".join(self.option() for _ in range(self.rng.randrange(most + 1)))

    def host(self) -> str:
        r = self.rng
        parts = [f"hardware ethernet {self.mac()};"] if r.random() < 0.8 else []
        if r.random() < 0.7:
            more = f", {self.ip()}" if r.random() < 0.2 else ""
            parts.append(f"fixed-address {self.ip()}{more};")
        if r.random() < 0.3:
            chosen = r.choice(["01:" + self.mac(), '"an-id"'])
            parts.append(f"host-identifier option dhcp-client-identifier {chosen};")
        return f"host h{r.randrange(5)} {{ {' '.join(parts)} {self.options(2)} }}"

    def klass(self) -> str:
        test = self.rng.choice([
            'substring (option vendor-class-identifier, 0, 3) = "PXE"',
            'option user-class = "u"', "option arch = 00:07", "substring (hardware, 1, 2) = 02:00",
            'option agent.circuit-id = "c"', 'option vendor-class-identifier = "v"',
            'option user-class = "a" or option user-class = "b"'])
        return f'class "c{self.rng.randrange(4)}" {{ match if {test}; {self.options(2)} }}'

    def pool(self) -> str:
        r = self.rng
        low = r.randrange(1, 250)
        rule = r.choice(['allow members of "c1";', 'deny members of "c2";',
                         'failover peer "p";', ""])
        net = r.randrange(4)
        return (f"pool {{ {rule} range 10.77.{net}.{low} "
                f"10.77.{net}.{low + r.randrange(5)}; }}")

    def subnet(self) -> str:
        r = self.rng
        net = r.randrange(4)
        mask = r.choice(["255.255.255.0", "255.255.255.128", "255.255.0.0"])
        body = [self.options(3)]
        for _ in range(r.randrange(3)):
            low = r.randrange(256)
            body.append(r.choice([self.pool(), f"range 10.77.{net}.{low} 10.77.{net}."
                                               f"{min(low + r.randrange(20), 255)};",
                                  self.host(), self.klass()]))
        return f"subnet 10.77.{net}.0 netmask {mask} {{ {' '.join(body)} }}"

    def conditional(self) -> str:
        r = self.rng
        test = r.choice(['exists user-class and option user-class = "iPXE"',
                         "option arch = 00:07", 'option user-class = "x"'])
        tail = r.choice(["", f"else {{ {self.options(2)} }}",
                         f"elsif option arch = 7 {{ {self.options(1)} }}"])
        return f"if {test} {{ {self.options(2)} }} {tail}"

    def statement(self) -> str:
        r = self.rng
        return r.choice([
            lambda: self.options(1), self.host, self.klass, self.subnet,
            lambda: f"shared-network s{r.randrange(2)} {{ {self.subnet()} {self.subnet()} "
                    f"{self.pool()} }}",
            lambda: f"group {{ {self.options(2)} {self.host()} {self.subnet()} }}",
            self.conditional, lambda: "option space PXE;",
            lambda: "option PXE.mtftp-ip code 1 = ip-address;"])()

    def config(self) -> str:
        return "\n".join(self.statement() for _ in range(self.rng.randrange(1, 12))) + "\n"


def config(seed: int) -> str:
    """The configuration of ``seed`` (the same text for the same seed)."""
    return Generator(seed).config()
