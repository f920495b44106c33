"""Messages and content parts: the text a user reads off them, and tool-call arguments."""

import pytest

from bastion.core import (
    AssistantMessage,
    FilePart,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    text_of,
)


def test_user_message_text_joins_text_parts_and_skips_media():
    #
    message = UserMessage(
        content=[
            TextPart(text="Describe "),
            ImagePart(url="https://x.test/a.png", media_type="image/png"),
            TextPart(text="this."),
        ]
    )
    assert message.text == "Describe this."
    assert UserMessage(content="plain").text == "plain"


def test_assistant_text_excludes_reasoning():
    #
    message = AssistantMessage(
        parts=[ReasoningPart(text="hmm "), TextPart(text="Yes"), ReasoningPart(text="ok")]
    )
    assert message.text == "Yes"
    assert message.reasoning == "hmm ok"


def test_a_tool_call_only_assistant_message_has_no_text():
    #
    message = AssistantMessage(tool_calls=[ToolCall(id="c", name="t")])
    assert message.parts == []
    assert message.text == ""


def test_tool_message_text():
    #
    message = ToolMessage(
        tool_call_id="c", tool_name="t", content=[TextPart(text="a"), TextPart(text="b")]
    )
    assert message.text == "ab"
    assert not message.is_error


def test_file_part_requires_a_media_type():
    #
    part = FilePart(media_type="application/pdf", url="https://x.test/a.pdf")
    assert (part.type, part.filename, part.data) == ("file", None, None)


def test_tool_call_args_parses_json_and_treats_blank_as_empty():
    #
    assert ToolCall(id="c", name="t", arguments='{"a": [1, 2]}').args() == {"a": [1, 2]}
    assert ToolCall(id="c", name="t", arguments="  ").args() == {}
    assert ToolCall(id="c", name="t").args() == {}


def test_tool_call_keeps_malformed_arguments_verbatim():
    #
    call = ToolCall(id="c", name="t", arguments='{"a": ')
    assert call.arguments == '{"a": '
    with pytest.raises(ValueError, match="Expecting value"):
        call.args()


def test_text_of_a_string_or_parts():
    #
    assert text_of("x") == "x"
    assert (
        text_of(
            [TextPart(text="a"), ImagePart.from_bytes(b"\x00", "image/png"), TextPart(text="b")]
        )
        == "ab"
    )
    assert text_of([]) == ""
