import os

import pytest

from ipamd.outbox.secrets import SecretError, parse_ref, resolve


def test_env_reference(monkeypatch):
    monkeypatch.setenv("IPAMD_T_SECRET", "s3cr3t")
    assert resolve("env:IPAMD_T_SECRET") == b"s3cr3t"


def test_missing_variable_is_named_in_the_log_only(monkeypatch, caplog):
    # The message is an outbox row's last_error, read by viewers: it says what is wrong but
    # not where the secret lives (core/secret_locations); the server log names it.
    monkeypatch.delenv("IPAMD_T_ABSENT", raising=False)
    with pytest.raises(SecretError) as caught:
        resolve("env:IPAMD_T_ABSENT")
    assert str(caught.value) == ("the secret could not be read: its environment variable is "
                                 "not set on this node (see the server log)")
    assert "IPAMD_T_ABSENT is not set" in caught.value.detail
    assert "IPAMD_T_ABSENT" in caplog.text


def test_file_reference_0600_trailing_newline_dropped(tmp_path):
    path = tmp_path / "hook.secret"
    path.write_bytes(b"file-secret\n")
    os.chmod(path, 0o600)
    assert resolve(f"file:{path}") == b"file-secret"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_file_readable_by_others_is_refused(tmp_path, mode):
    path = tmp_path / "hook.secret"
    path.write_bytes(b"file-secret")
    os.chmod(path, mode)
    with pytest.raises(SecretError) as caught:
        resolve(f"file:{path}")
    assert f"mode {mode:04o}" in str(caught.value)
    assert "0600" in str(caught.value)
    assert "file-secret" not in str(caught.value)
    assert str(tmp_path) not in str(caught.value) and str(path) in caught.value.detail


def test_missing_and_empty_files(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"\n")
    os.chmod(empty, 0o600)
    for ref, says in ((f"file:{tmp_path}/nope", "does not exist"), (f"file:{empty}", "is empty"),
                      (f"file:{tmp_path}", "not a regular file"), ("nonsense", "not usable")):
        with pytest.raises(SecretError, match=says) as caught:
            resolve(ref)
        assert str(tmp_path) not in str(caught.value), ref  # no location in the message


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("s3cr3t", "env:<VARIABLE_NAME> or file:<absolute_path>"),
        ("vault:x", "env:<VARIABLE_NAME>"),
        ("env:", "variable name"),
        ("env:1ABC", "variable name"),
        ("env:A-B", "variable name"),
        ("file:relative/path", "absolute path"),
        ("file:/etc/../etc/shadow", "'..'"),
        ("file:/tmp/a\nb", "control characters"),
    ],
)
def test_bad_references(ref, message):
    with pytest.raises(ValueError) as caught:
        parse_ref(ref)
    assert message in str(caught.value)


def test_good_references():
    assert str(parse_ref("env:HOOK_SECRET_1")) == "env:HOOK_SECRET_1"
    assert parse_ref("file:/etc/ipamd/hook.secret").name == "/etc/ipamd/hook.secret"
