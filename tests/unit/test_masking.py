from tqadmin.masking import mask_text, mask_url


def test_a_url_password_is_replaced_by_stars() -> None:
    assert mask_url("amqp://user:s3cret@host:5672/vh") == "amqp://user:***@host:5672/vh"


def test_a_url_without_password_is_unchanged() -> None:
    assert mask_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_passwords_inside_free_text_are_masked() -> None:
    text = "failed to connect to amqp://bob:hunter2@rabbit/ and password=hunter2"
    masked = mask_text(text)
    assert "hunter2" not in masked
    assert "amqp://bob:***@rabbit/" in masked


def test_literal_secrets_are_masked_anywhere() -> None:
    assert mask_text("token abcdef leaked", secrets=("abcdef",)) == "token *** leaked"
