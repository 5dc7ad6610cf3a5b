/** The panel's icon: a speech bubble with a prompt chevron, coloured by the theme. */

import { LabIcon } from '@jupyterlab/ui-components';

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3.3 4.3-1.4 1.4L8.2 11l-2.3 2.3 1.4 1.4L11 11zM12 13v2h6v-2z"/>
</svg>`;

export const codeliaIcon = new LabIcon({ name: 'jupyter-codelia:icon', svgstr: svg });
