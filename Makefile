# ipamd — the front door. `make run` and `make test` set up everything they need:
# Debian packages (when missing), the virtualenv from the hashed lock files, the state dirs.
SHELL := /bin/bash
# Debian's own python3: the interpreter the appliance image ships (image/customize.sh makes its
# venv with it), so tests and benchmarks run what operators run. Another python3 earlier on PATH
# (pyenv, a hand-built one) is often built without PGO/LTO: 14-27 % slower on our hot paths
# (DHCP codec, JSON, pydantic; docs/DEVELOPING.md). PYTHON=... overrides.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
# The venv remembers which interpreter made it; another one makes it again (see venv).
PYTHON_REAL := $(shell $(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null)
VENV := .venv
BIN := $(VENV)/bin
export IPAMD_CONFIG ?= $(CURDIR)/config/ipamd.toml

# Debian packages: the appliance needs postgresql; the tests also drive real DHCP clients and
# relays in network namespaces; the benchmark measures Kea with perfdhcp.
# libkrb5-dev: the gssapi package (ad_gsstsig DNS updates) builds against it (with python3-dev's
# headers); python3-venv: Debian's python3 makes the venv.
# gcc: mypyc's C for the DHCP hot path (see compiled) and gssapi's build.
RUN_PACKAGES := postgresql postgresql-contrib iproute2 libkrb5-dev python3-venv python3-dev gcc
TEST_PACKAGES := $(RUN_PACKAGES) isc-dhcp-client isc-dhcp-relay busybox chromium
TEST_PACKAGES += dhcpcd-base  # a second DHCPv6 client (tests/e2e/dhcp6)
TEST_PACKAGES += prometheus prometheus-alertmanager  # ops tests (docs/operations-monitoring.md)
TEST_PACKAGES += bind9 bind9-dnsutils pdns-server pdns-backend-sqlite3 krb5-kdc krb5-admin-server  # DNS adapters (docs/dns.md)
TEST_PACKAGES += apt-utils  # apt-ftparchive: the image build's recorded inputs (tests/unit/test_image_inputs.py)
TEST_PACKAGES += kea-doc isc-dhcp-server kea-dhcp4-server  # ipamd-import: the examples it reads, and Kea beside the appliance to prove the mapping (docs/migrating.md)
BENCH_PACKAGES := $(TEST_PACKAGES) kea-dhcp4-server kea-admin postgresql-client dnsperf wrk
BENCH_PACKAGES += kea-dhcp6-server  # bench_dhcp6: kea-dhcp6 beside perfdhcp -6
# `make lint`: the console's JavaScript linter (Debian's eslint, with its node modules).
LINT_PACKAGES := eslint
# `make ha-lab` only (docs/scale-out.md): Patroni and etcd, too heavy for CI.
LAB_PACKAGES := $(RUN_PACKAGES) postgresql-client patroni etcd-server
# The image build (image/build.sh) and its boot test run on the build host, never in CI.
# gcc, python3-dev, python3-venv: the image's compiled DHCP hot path is built on the host.
# apt-utils: apt-ftparchive indexes a build's recorded .debs for `make image FROM=`.
IMAGE_PACKAGES := mmdebstrap git diffoscope-minimal gcc python3-dev python3-venv apt-utils
BOOT_PACKAGES := $(IMAGE_PACKAGES) podman runc uidmap isc-dhcp-client isc-dhcp-relay iproute2
VM_BOOT_PACKAGES := $(IMAGE_PACKAGES) qemu-system-x86 isc-dhcp-client isc-dhcp-relay iproute2

.PHONY: FORCE run setup test lint bench clean compiled tarball image image-verify image-boot-test image-vm-boot-test system-run system-test system-bench system-lint system-image system-boot system-vm-boot venv console-vendor ha-lab dhcp6-kill9-lab

venv: $(BIN)/.installed

$(BIN)/.installed: requirements.lock requirements-build.lock pyproject.toml $(VENV)/.made-by
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements-build.lock
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# The interpreter the venv was made with; when PYTHON now names another, the venv is made
# again from scratch (packages built for one interpreter are not reused by another).
$(VENV)/.made-by: FORCE
	@if [ "$$(cat $@ 2>/dev/null)" != "$(PYTHON_REAL)" ]; then \
	  if [ -e $(VENV) ]; then echo "$(VENV) was made by another interpreter: making it again with $(PYTHON_REAL)"; fi; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && echo "$(PYTHON_REAL)" > $@; fi

# The DHCP hot paths (dhcp/, dhcp6/) compiled by mypyc into build/mypyc (src/ipamd/dhcp/compiled.py), again
# after any change to a source there. Without it (or stale) the same modules run as Python.
COMPILED := build/mypyc/stamp.json
compiled: $(COMPILED)

$(COMPILED): $(wildcard src/ipamd/dhcp/*.py src/ipamd/dhcp6/*.py) $(BIN)/.installed
	$(BIN)/python -c 'import sys; from ipamd.dhcp.compiled import main; sys.exit(main())'

define apt_ensure
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install:$$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

system-run:
	$(call apt_ensure,$(RUN_PACKAGES))

system-test:
	$(call apt_ensure,$(TEST_PACKAGES))

system-bench:
	$(call apt_ensure,$(BENCH_PACKAGES))

system-lint:
	$(call apt_ensure,$(LINT_PACKAGES))

system-image:
	$(call apt_ensure,$(IMAGE_PACKAGES))

system-boot:
	$(call apt_ensure,$(BOOT_PACKAGES))

system-vm-boot:
	$(call apt_ensure,$(VM_BOOT_PACKAGES))

var:
	install -d -m 0755 var var/log var/supervisor

# Everything `make run` needs, without starting it (a systemd host: systemd/ipamd.service).
setup: system-run venv compiled var

# The appliance in the foreground: supervisord runs postgres and ipamd (Ctrl-C stops both).
run: setup
	exec $(BIN)/supervisord -n -c appliance/supervisord.conf

test: system-test venv compiled
	IPAMD_EXPECT_COMPILED=1 $(BIN)/python -m pytest

# ruff, then the import contract between the rooms (docs/DEVELOPING.md): a break names
# the file, the line and the import; then eslint over the console's modules (.eslintrc.json:
# eslint:recommended, lines of at most 120 characters, no module-level `let`). NODE_PATH:
# Debian's node modules live in /usr/share/nodejs, which a nodejs not built by Debian
# (NodeSource's) does not search; -f unix: the default formatter needs chalk, not a dependency.
# mypy: strict over all of src/ ([tool.mypy] in pyproject.toml; 0 errors, every ignore says why);
# code_size: no function in src/ over 60 lines, no module over 450 (it names the offenders).
# no_patching: nothing in src/ assigns to another package's module or class attributes.
lint: system-lint venv
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m tests.support.import_contract
	$(BIN)/mypy
	$(BIN)/python -m tests.support.code_size
	$(BIN)/python -m tests.support.no_patching
	NODE_PATH=/usr/share/nodejs eslint --max-warnings 0 -f unix src/ipamd/console/js

bench: system-bench venv compiled
	$(BIN)/python -m bench.run_all

# Database failover under relayed DHCP load in network namespaces (10.77.16.0/24): etcd, two
# Postgres under Patroni (synchronous_mode), two appliance nodes, a relay; kill -9 the leader's
# postgres; then again killing appliance node A (and its claimed outbox rows) instead;
# prints Acks lost, double allocations and the time to the first new Ack.
ha-lab: venv compiled
	$(call apt_ensure,$(LAB_PACKAGES))
	$(BIN)/python -m bench.ha_lab run
	$(BIN)/python -m bench.ha_lab run --kill node

# kill -9 of a real `ipamd run` while 1,000 DHCPv6 clients run Solicit/Advertise/Request/Reply
# through a relay on ::1 (CI runs the same test with 16; IPAMD_KILL9_CLIENTS sets the count);
# prints Replies granted and bindings lost (must be 0).
dhcp6-kill9-lab: venv compiled
	IPAMD_KILL9_CLIENTS=$${IPAMD_KILL9_CLIENTS:-1000} $(BIN)/python -m pytest -s -q \
	  tests/integration/dhcp6/test_kill9.py

# The source release: `git archive` of this commit, gzipped without name or time (dist/).
tarball:
	./image/tarball.sh

# The appliance image into build/image/ (see image/README.md); root. The Debian packages as the
# mirror has them today; FROM=<a build's debs/ or a tarball of it>: the same image again from
# those recorded inputs, no mirror; LOCK=<a packages.lock>: exactly its versions from the mirror.
image: system-image
	FROM="$(FROM)" LOCK="$(LOCK)" ./image/build.sh

# Two builds from two clean clones of this commit; identical SHA256SUMS or a diff.
image-verify: system-image
	./image/verify.sh

# Too heavy for `make test`: boots build/image's container, first token, a relayed lease.
image-boot-test: system-boot venv
	$(BIN)/python image/boot_test.py

# The VM disk under qemu/KVM: serial console, first token, a relayed lease (root, /dev/kvm).
image-vm-boot-test: system-vm-boot venv
	$(BIN)/python image/vm_boot_test.py

clean:
	rm -rf $(VENV) var build dist .pytest_cache .ruff_cache .hypothesis src/*.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# The browser tests' axe-core, pinned; `npm pack` verifies nothing itself, so check the hash.
AXE_VERSION := 4.14.1
AXE_INTEGRITY := sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==
console-vendor:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null && \
	got="sha512-$$(openssl dgst -sha512 -binary axe-core-$(AXE_VERSION).tgz | base64 -w0)" && \
	test "$$got" = "$(AXE_INTEGRITY)" && tar xzf axe-core-$(AXE_VERSION).tgz && \
	cp package/axe.min.js $(CURDIR)/tests/browser/vendor/axe.min.js && \
	cp package/LICENSE $(CURDIR)/tests/browser/vendor/axe-core.LICENSE && rm -rf $$tmp
