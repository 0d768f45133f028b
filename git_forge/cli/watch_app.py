"""``git forge watch``'s live view, built on Textual.

Why Textual: the view needs keys (open an agent's output, go back, quit), a table
with a cursor, scrolling output and a refresh timer — an application, which Rich
alone (a renderer) leaves to hand-written terminal handling. Textual is Rich's own
application framework, kept by the same people, honours ``NO_COLOR`` itself, and
comes with a test harness (``App.run_test``/``Pilot``) the tests drive it through.
Only this module imports it (``cli/watch.py`` imports this module only for the live
view), so no other command pays its start-up.

Every string shown comes from the frame (``watch_report.watch_frame``), worded by
``cli/watch_text.py`` as ``--once`` words it, cleaned (``safetext.clean``) and shown as
``rich.text.Text`` — never as markup, so an agent's ``[bold]`` is text.
"""

from __future__ import annotations

import base64

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Log, Static

from git_forge.cli.watch_text import (
    AGENT_COLUMNS,
    agent_cells,
    detail_lines,
    limit_line,
    run_line,
    totals_line,
)
from git_forge.errors import ForgeError
from git_forge.layout import PROC_DIR
from git_forge.runner.base import Runner
from git_forge.safetext import clean
from git_forge.supervisor.follow import OutputReader
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.view import ProcView
from git_forge.watch_report import WatchJSON, stream_reader, watch_frame
from git_forge.workspace import Workspace

#: The most lines an output screen holds (the oldest leave first; it says so).
OUTPUT_LINES = 20_000
#: How much of an agent's output one refresh of its screen reads, at most.
OUTPUT_WINDOW = 256 * 1024
OUTPUT_READS_PER_TICK = 8


def _text(line: str, style: str = "") -> Text:
    return Text(clean(line), style=style, no_wrap=True, overflow="ellipsis")


class OutputScreen(Screen[None]):
    """One process's whole output, followed while it runs."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"),
                Binding("q", "app.pop_screen", "Back")]

    def __init__(self, view: ProcView, handle: str, label: str,
                 stream: str | None = None) -> None:
        super().__init__()
        self.handle = handle
        self.label = label
        self.ended = False
        #: A structured stream's text as its profile's reader says it (``--follow``'s),
        #: fed the raw bytes; any other output is read as safe text.
        self.said: list[str] = []
        self.stream = stream_reader(stream, self.said.append)
        self.reader = OutputReader(view, handle, 0, window=OUTPUT_WINDOW,
                                   encoding="text" if self.stream is None else "base64")

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(_text(f"{self.label} — the last {OUTPUT_LINES:,} lines at most; all of it: "
                           f"git forge proc output {self.handle}"), id="output-title")
        yield Log(max_lines=OUTPUT_LINES, id="output")
        yield Footer()

    def on_mount(self) -> None:
        self.pull()
        self.set_interval(0.5, self.pull)

    def pull(self) -> None:
        """What the process printed since the last look, a few windows at a time."""
        if self.ended:
            return
        log = self.query_one("#output", Log)
        for _ in range(OUTPUT_READS_PER_TICK):
            try:
                read = self.reader.read()
            except ProcessError as exc:
                log.write_line(clean(f"(output unreadable: {exc.message})"))
                self.ended = True
                return
            rendered = read.rendered
            if rendered.gap:
                log.write_line("… (earlier output no longer kept)")
            if self.stream is not None:
                self.stream.feed(base64.b64decode(rendered.output))
                for text in self.said:
                    log.write_line(clean(text))
                self.said.clear()
            elif rendered.output:
                log.write(rendered.output)
            if read.manifest.terminal and self.reader.cursor >= rendered.total_bytes:
                log.write_line(f"\n(ended: {read.manifest.state})")
                self.ended = True
                return
            if rendered.next_cursor == rendered.start_cursor:
                return


class WatchApp(App[None]):
    """The run at a glance, refreshed every ``interval`` seconds."""

    TITLE = "git forge watch"
    CSS = """
    #run { height: auto; padding: 0 1; }
    #agents { height: auto; max-height: 60%; }
    #details { height: auto; padding: 0 1; }
    #output-title { height: auto; padding: 0 1; }
    """
    BINDINGS = [Binding("q", "quit", "Quit"),
                Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
                Binding("o", "open_output", "Agent's output"),
                Binding("r", "refresh_frame", "Refresh")]

    def __init__(self, workspace: Workspace, runner: Runner, interval: float = 1.0) -> None:
        super().__init__()
        self.workspace = workspace
        self.runner = runner
        self.interval = interval
        self.frame: WatchJSON | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="run")
        yield DataTable(id="agents", cursor_type="row", zebra_stripes=True)
        yield Static(id="details")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = clean(str(self.workspace.root))
        self.action_refresh_frame()
        self.set_interval(self.interval, self.action_refresh_frame)

    def action_refresh_frame(self) -> None:
        """Read the run again and show it (an unreadable file is shown, never raised:
        the view stays up while the loop rewrites what it reads)."""
        try:
            frame = watch_frame(self.workspace, self.runner)
        except ForgeError as exc:
            self.query_one("#run", Static).update(_text(f"cannot read the run: {exc.message}",
                                                        "bold red"))
            return
        self.frame = frame
        run = Text("\n").join([_text(run_line(frame), "bold"), _text(totals_line(frame))]
                              + [_text(line, "bold yellow") for line in [limit_line(frame)]
                                 if line])
        self.query_one("#run", Static).update(run)
        self._agents(frame)
        details = detail_lines(frame)
        if not frame["agents"]:
            details = ["agents: none running", *details]
        self.query_one("#details", Static).update(
            Text("\n").join(_text(line) for line in details))

    def _agents(self, frame: WatchJSON) -> None:
        table = self.query_one("#agents", DataTable)
        selected = self._selected()
        table.display = bool(frame["agents"])  # "agents: none running" says it instead
        table.clear(columns=True)  # widths fit the rows shown now, not every row ever shown
        table.add_columns(*AGENT_COLUMNS)
        for agent in frame["agents"]:
            table.add_row(*(_text(cell) for cell in agent_cells(agent)), key=agent["handle"])
        handles = [agent["handle"] for agent in frame["agents"]]
        if selected in handles:
            table.move_cursor(row=handles.index(selected))

    def _selected(self) -> str | None:
        table = self.query_one("#agents", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return None if key.value is None else str(key.value)

    def action_open_output(self) -> None:
        handle = self._selected()
        if handle is None or self.frame is None:
            self.notify("no agent is running", severity="warning")
            return
        agent = next(a for a in self.frame["agents"] if a["handle"] == handle)
        what = f"check: {agent['gate']}" if agent["gate"] else agent["title"] or ""
        who = agent["itemId"] or ("baseline" if agent["gate"] else handle)
        label = f"{who} {what}".strip()
        view = ProcView(self.workspace.state_dir / PROC_DIR)
        self.push_screen(OutputScreen(view, handle, label, agent["stream"]))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_output()
