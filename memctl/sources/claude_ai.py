"""``--format claude-ai``: Claude.ai data exports, ``conversations.json``.

A JSON array of conversations ``{uuid, name, created_at, updated_at, chat_messages}``;
each message ``{uuid, sender: human|assistant, text, content[], created_at,
attachments, files}``. The export's ``projects.json`` and ``users.json`` hold no
conversations: auto-detection passes them by, and forcing this format on them refuses
the file.

- **Which messages.** ``chat_messages`` in array order. When messages are linked by
  ``parent_message_uuid`` (exports and API dumps of conversations with edits or
  retries), only the branch ending at ``current_leaf_message_uuid`` is read (else at
  the newest leaf, by ``created_at``); each human message on an abandoned branch is
  reported as skipped.
- **Text.** From the ``content`` blocks when there are any: ``text`` blocks only
  (adjacent ones joined as they are — citations split a sentence into blocks — and
  with a blank line where another block stood between them). The top-level ``text``
  is used only when there are no blocks, because it *includes the thinking* of the
  reply. Left out and counted in ``left_out``: ``thinking`` (and
  ``redacted_thinking``), ``tool_use``, ``tool_result``, ``image`` and any other block,
  by its ``type``; ``attachments`` (``attachment``) and ``files`` (``file``).
- **Episodes.** One per human message, with the text of the assistant messages that
  follow it up to the next human message. The conversation ``name`` is generated and
  never part of an episode. A human message with no text is skipped with its reply.
- **Time.** A human message's own ``created_at`` (ISO; epoch numbers told apart by
  magnitude as for ChatGPT). A null one is interpolated as for ChatGPT (source
  ``session``): the nearest later message's ``created_at`` on the branch, else the
  nearest earlier one's, else the conversation's ``created_at``. A human message whose
  ``created_at`` is not a time is skipped as malformed.
- **Position.** The 1-based number of the message in the file, counting the
  ``chat_messages`` entries of every conversation in file order (a conversation without
  a readable ``chat_messages`` list takes one number).
- **Identity.** ``"{conversation uuid}:{message uuid}"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from memctl import times
from memctl.sources import Head, IngestOptions, Skipped, Turn
from memctl.sources.exports import ABANDONED, Malformed, Message, assemble, count, export_turns, instant

NAME = "claude-ai"

# A root message's parent is this sentinel rather than null.
_ROOT = "00000000-0000-4000-8000-000000000000"
_KINDS = {"redacted_thinking": "thinking"}


def sniff(path: Path, head: Head) -> bool:
    return '"chat_messages"' in head.json_text


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped]:
    return export_turns(path, "chat_messages", list, "Claude.ai conversations", _conversation)


def _conversation(conversation: dict, chat: list, index: int, base: int) -> Iterator[Turn | Skipped]:
    conversation_id = conversation.get("uuid")
    conversation_id = conversation_id if isinstance(conversation_id, str) else None
    where = f"conversation {index}" + (f" ({conversation_id})" if conversation_id else "")

    branch, cycle = _branch(chat, conversation.get("current_leaf_message_uuid"))
    if cycle:
        yield Skipped(base + 1, f"{where}: parent_message_uuid links form a cycle", malformed=True)
    messages = [_message(chat[i], base + 1 + i, conversation_id, where) for i in branch]
    yield from assemble(messages, times.record_time_or_none(conversation.get("created_at")))

    on_branch = set(branch)
    for i, item in enumerate(chat):
        if i not in on_branch and isinstance(item, dict) and item.get("sender") == "human":
            yield Skipped(base + 1 + i, ABANDONED)


def _branch(chat: list, leaf: object) -> tuple[list[int], bool]:
    """Indexes into ``chat`` of the messages that happened, in order; and whether a cycle cut them."""
    by_id = {
        item["uuid"]: i for i, item in enumerate(chat) if isinstance(item, dict) and isinstance(item.get("uuid"), str)
    }
    parent = {
        i: item.get("parent_message_uuid")
        for i, item in enumerate(chat)
        if isinstance(item, dict) and isinstance(item.get("parent_message_uuid"), str)
    }
    if not any(p in by_id for p in parent.values()):
        return list(range(len(chat))), False  # no tree: the array is the conversation
    if not (isinstance(leaf, str) and leaf in by_id):
        referenced = set(parent.values())
        newest, newest_time = None, ""
        for uuid, i in by_id.items():
            if uuid in referenced:
                continue
            time = times.record_time_or_none(chat[i].get("created_at")) or ""
            if newest is None or time > newest_time or (time == newest_time and i > newest):
                newest, newest_time = i, time
        if newest is None:  # every message is some message's parent: links go round
            return list(range(len(chat))), True
        leaf = chat[newest]["uuid"]
    chain: list[int] = []
    seen: set[int] = set()
    at: int | None = by_id[leaf]
    while at is not None:
        if at in seen:
            chain.reverse()
            return chain, True
        seen.add(at)
        chain.append(at)
        up = parent.get(at)
        at = by_id.get(up) if up not in (None, _ROOT) else None
    chain.reverse()
    return chain, False


def _message(item: object, position: int, conversation_id: str | None, where: str) -> Message:
    def malformed(problem: str, role: str = "other") -> Message:
        skip = Skipped(position, f"{where}, message {position}: {problem}", malformed=True)
        return Message(position, role, skip=skip)

    if not isinstance(item, dict):
        return malformed("message is not an object")
    sender = item.get("sender")
    role = {"human": "user", "assistant": "assistant"}.get(sender) if isinstance(sender, str) else None
    if role is None:
        return malformed(f"sender {sender!r} is neither 'human' nor 'assistant'")
    try:
        time = instant(item.get("created_at"))
    except Malformed as error:
        if role == "user":
            return malformed(f"created_at {error}", role)
        time = None
    try:
        text, left_out = _text(item)
    except Malformed as error:
        return malformed(str(error), role)
    uuid = item.get("uuid") if isinstance(item.get("uuid"), str) else None
    return Message(
        position,
        role,
        text,
        left_out,
        time,
        source_id=uuid if role == "user" else None,
        identity=f"{conversation_id}:{uuid}" if role == "user" and conversation_id and uuid else None,
    )


def _text(item: dict) -> tuple[str, dict[str, int]]:
    left_out: dict[str, int] = {}
    for key, kind in (("attachments", "attachment"), ("files", "file")):
        value = item.get(key)
        if value is not None and not isinstance(value, list):
            raise Malformed(f"{key} is not a list")
        count(left_out, kind, len(value or ()))
    blocks = item.get("content")
    if blocks is not None and not isinstance(blocks, list):
        raise Malformed("content is not a list")
    if not blocks:
        text = item.get("text")
        if text is not None and not isinstance(text, str):
            raise Malformed("text is not a string")
        return text or "", left_out
    pieces: list[str] = []
    gap = False  # a left-out block stood since the last text block
    for block in blocks:
        block_type = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block_type, str):
            raise Malformed("a content block has no type")
        if block_type == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise Malformed("a text block's text is not a string")
            if gap and pieces:
                pieces.append("\n\n")
            pieces.append(text)
            gap = False
        else:
            count(left_out, _KINDS.get(block_type, block_type))
            gap = True
    return "".join(pieces), left_out
