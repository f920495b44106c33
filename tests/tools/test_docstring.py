"""Reading tool and parameter descriptions from Google- and Sphinx-style docstrings."""

from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.tools._docstring import parse_docstring


def test_google_style_args_section():
    # covers C8, T-01
    description, params = parse_docstring(
        """Look up the weather.

        Uses the public forecast service.

        Args:
            city: Name of the city,
                in English.
            days (int): How many days ahead.
            **extra: Ignored.

        Returns:
            The forecast as text.
        """
    )
    assert description == "Look up the weather.\n\nUses the public forecast service."
    assert params == {
        "city": "Name of the city, in English.",
        "days": "How many days ahead.",
        "extra": "Ignored.",
    }


def test_sphinx_style_params():
    # covers C8, T-01
    description, params = parse_docstring(
        """Send an email.

        :param to: Recipient address.
        :param str subject: Subject line,
            kept short.
        :type subject: str
        :returns: The message id.
        """
    )
    assert description == "Send an email."
    assert params == {"to": "Recipient address.", "subject": "Subject line, kept short."}


def test_nested_indented_lines_in_args_continue_the_current_parameter():
    # covers C8
    _, params = parse_docstring(
        """Do it.

        Args:
            mode: One of:
                fast: skips checks
                slow: checks everything
        """
    )
    assert params == {"mode": "One of: fast: skips checks slow: checks everything"}


def test_empty_and_missing_docstrings():
    # covers C8
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("") == ("", {})
    assert parse_docstring("Just a line.") == ("Just a line.", {})


def test_text_after_the_args_section_is_not_glued_to_the_last_parameter():
    # covers C8, T-01
    description, params = parse_docstring(
        """Do it.

        Args:
            x: The x value.

        This paragraph is about the function, not about x.
        """
    )
    assert params == {"x": "The x value."}
    assert description.endswith("This paragraph is about the function, not about x.")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_crashes_on_arbitrary_text(text: str):
    # covers C8
    description, params = parse_docstring(text)
    assert isinstance(description, str)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())


_doc_lines = st.sampled_from(
    ["Args:", "Returns:", "    x: a", "        more", ":param y: b", ":type y: int", "", "text"]
) | st.text(max_size=15)


@settings(max_examples=300, deadline=None)
@given(st.lists(_doc_lines, max_size=12))
def test_never_crashes_on_docstring_shaped_text(lines: list[str]):
    # covers C8
    parse_docstring("\n".join(lines))
