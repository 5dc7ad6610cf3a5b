/**
 * The JupyterLab plugin: registers the "Codelia" right-side panel, its command (palette entry and
 * keyboard shortcut, see schema/plugin.json) and makes the panel follow the active notebook.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { CellControls } from './cellcontrols';
import { acceptPanelComms } from './connection';
import { MainShellWatch } from './mainshell';
import { NotebookToolsHandler } from './notebooktools';
import { CodeliaPanel } from './panel';

export const COMMAND_OPEN = 'codelia:open';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-codelia:plugin',
  description: 'A side-panel chat with the Codelia agent running in the notebook kernel.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const panel = new CodeliaPanel(rendermime);
    panel.title.label = '';
    app.shell.add(panel, 'right', { rank: 600 });
    restorer?.add(panel, 'jupyter-codelia-panel');

    // Every notebook answers the agent's cell tools, whether or not the side panel follows it.
    const attach = (notebook: NotebookPanel) => {
      const handler = new NotebookToolsHandler(notebook);
      // A blocking %%codelia cell's own Stop and approval buttons (the cell holds the shell).
      const controls = new CellControls(notebook);
      // The status bar says Busy while that cell runs and it keeps its own In [n], whatever
      // runs on subshells meanwhile.
      const status = new MainShellWatch(notebook, NotebookActions.executed);
      notebook.disposed.connect(() => {
        handler.dispose();
        controls.dispose();
        status.dispose();
      });
      // A kernel may open a panel comm for a panel of another page on the same kernel: this
      // page must accept (and ignore) it rather than close it for that page.
      const context = notebook.sessionContext;
      const accept = () => {
        const kernel = context.session?.kernel;
        if (kernel) {
          acceptPanelComms(kernel);
        }
      };
      context.kernelChanged.connect(accept);
      void context.ready.then(accept);
    };
    tracker.forEach(attach);
    tracker.widgetAdded.connect((_, notebook) => attach(notebook));

    panel.follow(tracker.currentWidget);
    tracker.currentChanged.connect((_, notebook) => panel.follow(notebook));

    app.commands.addCommand(COMMAND_OPEN, {
      label: 'Open Codelia chat',
      caption: 'Show the Codelia side panel and focus its message box',
      execute: () => {
        app.shell.activateById(panel.id);
        panel.focusInput();
      }
    });
    palette?.addItem({ command: COMMAND_OPEN, category: 'Codelia' });
  }
};

export default plugin;
